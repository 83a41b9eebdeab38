//go:build integration

package integration

import (
	"bytes"
	"context"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/integration/internal/system"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// The ways a call to a remote system ends without saying whether it took
// place, and the two ways it does not (copies at the same moment, an
// outage), each a key of one run per policy (scenarioRemoteEffects).
const (
	remoteLost   = "lost"   // the partner applies, the reply is lost (the connection closes)
	remoteSlow   = "slow"   // the partner applies, the reply comes after the caller gave up (its deadline)
	remoteKill   = "kill"   // the instance dies right after the call returned
	remoteDown   = "down"   // the partner refuses the key's first two requests, attempts a visibility timeout apart: longer than the lease
	remoteCopies = "copies" // 8 copies of the key delivered to 8 instances at the same moment
)

// remotePolicy is one way to run lease mode's remote effect: the
// variables that choose it (none: the effect as the fork made it).
type remotePolicy struct {
	name string
	env  map[string]string
	// reconcile: the run proves a reconciling effect, and skips for an
	// effect without a Reconcile.
	reconcile bool
}

// remoteRun is what a run left: each case's key, how many times the
// partner applied it, its record, and the reasons of its dead letters.
type remoteRun struct {
	msgs    []system.Message
	keys    map[string]string // case → key
	applied map[string]int    // key → effects
	records map[string]idem.Record
	dead    map[string][]string
	report  system.Report
}

// scenarioRemoteEffects (lease mode, the effect's remote system: the
// partner, which counts every call, repeats included). Each case's fault
// happens once, on a link between the consumers and the partner (or at
// the crash point after the call), by event, never by timing. What is
// checked is the guarantee the consumer of each run says it keeps (its
// init line), not one path through it: on a loaded machine an acquire
// whose reply timed out although it was written is an unknown outcome
// too, and a message may use up its receives on store errors and reach
// the DLQ (with its reason).
//
//   - reconcile (the effect as it is; the template's Reconcile asks the
//     partner, policy retry; skipped for an effect without a Reconcile):
//     exactly once; the lost, slow and killed calls, which the partner
//     applied, are settled by asking it, never by calling it again.
//   - hold (no Reconcile, policy hold): at most once; the calls whose
//     outcome is unknown are HELD, their messages in the DLQ with the
//     reason; the operator asks the partner, resolves each key with
//     idemctl (done / not done), redrives the DLQ, and every key is then
//     applied exactly once.
//   - retry (no Reconcile, policy retry): at least once, the documented
//     window: a call that was applied but not answered runs again (a
//     rerun, counted), and only such a call (the lost, slow and killed
//     ones) is ever applied twice.
func scenarioRemoteEffects(t *testing.T) {
	for _, p := range []remotePolicy{
		{name: "reconcile", reconcile: true},
		{
			name: consumer.UnknownHold,
			env:  map[string]string{consumer.EnvFaultNoReconcile: "true", consumer.EnvUnknownOutcome: consumer.UnknownHold},
		},
		{
			name: consumer.UnknownRetry,
			env:  map[string]string{consumer.EnvFaultNoReconcile: "true", consumer.EnvUnknownOutcome: consumer.UnknownRetry},
		},
	} {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			runRemote(t, p)
		})
	}
}

// unknownCases are the cases whose first call the partner applied without
// the caller learning it.
var unknownCases = []string{remoteLost, remoteSlow, remoteKill}

func checkReconciled(t *testing.T, s *system.System, r remoteRun) {
	for _, c := range unknownCases {
		if k := r.keys[c]; len(r.dead[k]) == 0 && (r.applied[k] != 1 || r.records[k].Status != idem.StatusCompleted) {
			t.Errorf("%s: %s applied %d times, record %s; want once, COMPLETED", s.Promise, c, r.applied[k], r.records[k].Status)
		}
	}
	if r.report.Outcomes["reconciled"] == 0 {
		t.Errorf("%s: outcomes %v; want the calls the partner applied unanswered reconciled", s.Promise, r.report.Outcomes)
	}
}

func checkRetried(t *testing.T, s *system.System, r remoteRun) {
	twice := 0
	for c, k := range r.keys {
		switch n := r.applied[k]; {
		case n > 1 && !slices.Contains(unknownCases, c):
			t.Errorf("%s: %s applied %d times; only a call applied unanswered may run again", s.Promise, c, n)
		case n > 1:
			twice++
		}
	}
	if twice == 0 {
		t.Errorf("%s: no call applied unanswered ran again (applied %v): the window this policy leaves is not shown", s.Promise, r.applied)
	}
}

func checkHeld(t *testing.T, s *system.System, r remoteRun) {
	var held []string
	for c, k := range r.keys {
		rec := r.records[k]
		switch {
		case rec.Status == idem.StatusHeld:
			held = append(held, k)
			wantHeld(t, s, r.report, k, c)
		case slices.Contains(unknownCases, c) && rec.Status == idem.StatusCompleted:
			t.Errorf("%s: %s completed although its outcome was unknown and nothing may reconcile it", s.Promise, c)
		}
	}
	if len(held) == 0 {
		t.Fatalf("%s: no key held; records %v", s.Promise, r.records)
	}
	if t.Failed() {
		return
	}
	settleHeld(t, s, r.msgs, slices.Sorted(maps.Values(r.keys)))
}

func runRemote(t *testing.T, p remotePolicy) {
	// The effect's settings that name the suite's partner go through the
	// link instead (whatever the fork calls them).
	link := newFaultyLink(t)
	env := map[string]string{}
	for _, st := range contract.EffectSettings {
		if rest, ok := strings.CutPrefix(st.Suite, contract.SuitePartner); ok && st.AllowedIn(consumer.ModeLease) {
			env[st.Env] = link.URL() + rest
		}
	}
	if len(env) == 0 {
		t.Skip("the effect calls no remote system (no setting names contract.SuitePartner)")
	}
	for k, v := range p.env {
		env[k] = v
	}
	s := startSystem(t, system.Config{Consumers: 4, Mode: consumer.ModeLease, ConsumerEnv: env})
	if p.reconcile && !s.Promise.Reconcile {
		t.Skipf("the effect has no Reconcile (its consumer says %s): this run proves a reconciling effect; the hold and retry runs prove this one", s.Promise)
	}
	verify := map[string]func(*testing.T, *system.System, remoteRun){
		consumer.GuaranteeExactlyOnce: checkReconciled,
		consumer.GuaranteeAtMostOnce:  checkHeld,
		consumer.GuaranteeAtLeastOnce: checkRetried,
	}[s.Promise.Guarantee]
	if want := map[string]string{consumer.UnknownHold: consumer.GuaranteeAtMostOnce, consumer.UnknownRetry: consumer.GuaranteeAtLeastOnce}[p.name]; want != "" && !s.Promise.Is(want) {
		t.Fatalf("the %s run's consumer says %s: want %s (the run's variables %v did not take)", p.name, s.Promise, want, p.env)
	}
	link.forwardTo(s.Partner.URL())
	ctx := ctxFor(t, redeliveries(s, 6)+3*time.Minute)

	run := remoteRun{keys: map[string]string{}, records: map[string]idem.Record{}, dead: map[string][]string{}}
	var ks []string
	for _, c := range []string{remoteLost, remoteSlow, remoteKill, remoteDown, remoteCopies} {
		run.keys[c] = "remote-" + p.name + "-" + c
		ks = append(ks, run.keys[c])
	}
	msgs, err := s.Messages(ctx, ks...)
	if err != nil {
		t.Fatal(err)
	}
	run.msgs = msgs
	byKey := map[string]system.Message{}
	for _, m := range msgs {
		byKey[m.Key] = m
	}
	for _, c := range []string{remoteLost, remoteSlow, remoteDown} {
		link.fail(run.keys[c], c)
	}

	// The kill first, alone (a SIGKILL ends every record of its batch),
	// until it happened or the key's attempt was settled otherwise (held:
	// an acquire that timed out although written leaves an unknown
	// outcome before the call).
	kill := run.keys[remoteKill]
	kills := killOnce(s, consumer.FaultAfterEffect, kill)
	if err := s.SendRaw(ctx, byKey[kill]); err != nil {
		t.Fatal(err)
	}
	for kills.Load() == 0 && status(s, kill) != idem.StatusHeld {
		if ctx.Err() != nil {
			t.Fatal("the crash point was never reached")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The others, and 8 copies of one key at the same moment.
	sent := []system.Message{byKey[run.keys[remoteLost]], byKey[run.keys[remoteSlow]], byKey[run.keys[remoteDown]]}
	for range 8 {
		sent = append(sent, byKey[run.keys[remoteCopies]])
	}
	if err := s.SendRaw(ctx, sent...); err != nil {
		t.Fatal(err)
	}
	drain(t, s, redeliveries(s, 5))
	run.report = check(t, s, msgs)
	if run.applied, err = s.Applied(ctx, ks); err != nil {
		t.Fatal(err)
	}
	for _, d := range run.report.DeadLetters {
		run.dead[d.Key] = append(run.dead[d.Key], d.Reason)
	}
	for c, k := range run.keys {
		if run.records[k], _, err = s.Receipt(ctx, k); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s applied %d, record %s after %d attempts, partner calls %d, dead letters %q",
			p.name, c, run.applied[k], run.records[k].Status, run.records[k].Attempts, s.Partner.Calls(k), run.dead[k])
	}
	link.heal()
	verify(t, s, run)
}

// status is the status of key's record, "" when it has none (yet).
func status(s *system.System, key string) idem.Status {
	rec, _, _ := s.Receipt(context.Background(), key)
	return rec.Status
}

// faultyLink stands between the consumers and the partner: it passes
// every request on, but for a key it was told to fail, fails the key's
// first call (lost: applied, then the connection closes; slow: applied,
// then no answer until the caller gives up) or refuses its first two
// requests, calls and lookups alike (down).
type faultyLink struct {
	srv    *httptest.Server
	client *http.Client

	mu      sync.Mutex
	target  string
	faults  map[string]string // key → remoteLost, remoteSlow or remoteDown
	calls   map[string]int    // POSTs per key
	refused map[string]int
}

func newFaultyLink(t *testing.T) *faultyLink {
	l := &faultyLink{client: &http.Client{Timeout: time.Minute}, faults: map[string]string{}, calls: map[string]int{}, refused: map[string]int{}}
	l.srv = httptest.NewServer(l)
	t.Cleanup(l.srv.Close)
	return l
}

func (l *faultyLink) URL() string { return l.srv.URL }

func (l *faultyLink) forwardTo(target string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.target = target
}

func (l *faultyLink) fail(key, how string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.faults[key] = how
}

// heal ends every fault.
func (l *faultyLink) heal() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.faults)
}

func (l *faultyLink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	if r.Method == http.MethodGet {
		// A lookup: GET <the setting's path>/<key>, whatever the path.
		key, _ = url.PathUnescape(path.Base(r.URL.EscapedPath()))
	}
	post := r.Method == http.MethodPost
	l.mu.Lock()
	fault, target := l.faults[key], l.target
	if fault == remoteDown && l.refused[key] < 2 {
		l.refused[key]++
		l.mu.Unlock()
		http.Error(w, "partner down", http.StatusServiceUnavailable)
		return
	}
	first := false
	if post {
		l.calls[key]++
		first = l.calls[key] == 1
	}
	l.mu.Unlock()

	body, _ := io.ReadAll(r.Body)
	// The partner gets the call whatever the caller does meanwhile.
	req, err := http.NewRequestWithContext(context.WithoutCancel(r.Context()), r.Method, target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := l.client.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	switch {
	case post && first && fault == remoteLost:
		panic(http.ErrAbortHandler) // applied; the connection closes unanswered
	case post && first && fault == remoteSlow:
		select { // applied; no answer until the caller gives up
		case <-r.Context().Done():
		case <-time.After(5 * time.Minute):
		}
		return
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

// systemCLI runs idemctl against a system's stack, as the operator would.
type systemCLI struct {
	bin   string
	env   []string
	flags []string
}

func newSystemCLI(ctx context.Context, t *testing.T, s *system.System) *systemCLI {
	t.Helper()
	fn := s.Consumer.Function()
	return &systemCLI{
		bin: sharedIdemctl(t),
		env: cliEnv(t.TempDir(), s.Stack.Region, dynamoEndpoint(t), sqsEndpoint(t)),
		flags: []string{
			"--table", s.Receipts, "--namespace", fn.Env[consumer.EnvNamespace],
			"--queue-url", s.Queue.URL, "--dlq-url", s.DLQ.URL, "--key-field", s.Key,
		},
	}
}

// run runs `idemctl CMD <the stack's flags> ARGS...`, which must succeed,
// logs it and its output, and returns its output.
func (c *systemCLI) run(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	out := c.quiet(ctx, t, args...)
	t.Logf("%s", out)
	return out
}

// quiet is run logging the command only (a resolve's output is a page).
func (c *systemCLI) quiet(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, slices.Concat(args[:1], c.flags, args[1:])...)
	cmd.Env = c.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("idemctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("$ idemctl %s", strings.Join(args, " "))
	return string(out)
}
