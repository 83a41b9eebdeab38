package consumer

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

// These tests run several invocations of one Handler at once, as
// aws-lambda-go does with AWS_LAMBDA_MAX_CONCURRENCY > 1 (Lambda Managed
// Instances): one process, one Guard, one store, each invocation with its
// own deadline and request id.

const invocations = 8

// witness is a lease effect that records, per key, how often it ran, the
// request id and the deadline of the context it ran under. A key starting
// with "bad" fails; a key starting with "gate" waits until every
// invocation has one of its records in its effect.
type witness struct {
	gate *barrier

	mu        sync.Mutex
	runs      map[string]int
	requestID map[string]string
	deadline  map[string]time.Time
}

func newWitness(gate *barrier) *witness {
	return &witness{gate: gate, runs: map[string]int{}, requestID: map[string]string{}, deadline: map[string]time.Time{}}
}

func (w *witness) lease(ctx context.Context, key string, _ events.SQSMessage) ([]byte, error) {
	w.mu.Lock()
	w.runs[key]++
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		w.requestID[key] = lc.AwsRequestID
	}
	w.deadline[key], _ = ctx.Deadline()
	w.mu.Unlock()
	if strings.HasPrefix(key, "gate") && w.gate != nil {
		if err := w.gate.wait(ctx); err != nil {
			return nil, err
		}
	}
	if strings.HasPrefix(key, "bad") {
		return nil, idem.Definite(errors.New("refused " + key))
	}
	return []byte("done " + key), nil
}

func (w *witness) ran(key string) (runs int, requestID string, deadline time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.runs[key], w.requestID[key], w.deadline[key]
}

// barrier lets its waiters go once n have arrived; a waiter whose context
// ends first gets an error, so that a Handler that serialised its
// invocations fails the test rather than hanging it.
type barrier struct {
	mu      sync.Mutex
	waiting int
	n       int
	all     chan struct{}
}

func newBarrier(n int) *barrier { return &barrier{n: n, all: make(chan struct{})} }

func (b *barrier) wait(ctx context.Context) error {
	b.mu.Lock()
	b.waiting++
	if b.waiting == b.n {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("only %d of %d invocations in flight at once: %w", b.arrived(), b.n, ctx.Err())
	}
}

func (b *barrier) arrived() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiting
}

// process is a Handler as one Lambda process holds it, with its logs and
// metrics.
type process struct {
	h       *Handler
	store   idem.Store
	logs    *syncBuffer
	metrics *syncBuffer
	cfg     Config
}

func newProcess(t *testing.T, store idem.Store, eff Effect, env map[string]string) *process {
	t.Helper()
	cfg, err := Load(getenv(mergeEnv(map[string]string{EnvTable: "receipts", EnvKey: "orderId", EnvLogBodies: "true"}, env)))
	if err != nil {
		t.Fatal(err)
	}
	p := &process{store: store, logs: &syncBuffer{}, metrics: &syncBuffer{}, cfg: cfg}
	log := slog.New(slog.NewJSONHandler(p.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if p.h, err = New(cfg, store, eff, WithMetrics(p.metrics), WithLogger(log)); err != nil {
		t.Fatal(err)
	}
	return p
}

// invoke runs one invocation as aws-lambda-go does: its own deadline and
// request id in the context.
func (p *process) invoke(t *testing.T, requestID string, deadline time.Time, msgs ...events.SQSMessage) []string {
	ctx, cancel := context.WithDeadline(t.Context(), deadline)
	defer cancel()
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: requestID})
	resp, err := p.h.Handle(ctx, events.SQSEvent{Records: msgs})
	if err != nil {
		t.Errorf("%s: Handle returned %v, want nil", requestID, err)
	}
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	slices.Sort(failed)
	return failed
}

// lines are the JSON lines of b, each decoded.
func lines(t *testing.T, b *syncBuffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(b.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var doc map[string]any
		if err := json.Unmarshal(sc.Bytes(), &doc); err != nil {
			t.Fatalf("line is not JSON: %v: %s", err, sc.Text())
		}
		out = append(out, doc)
	}
	return out
}

func str(doc map[string]any, name string) string {
	s, _ := doc[name].(string)
	return s
}

func num(doc map[string]any, name string) int {
	f, _ := doc[name].(float64)
	return int(f)
}

// batchOf is what invocation i is handed: a gate record, i+1 records that
// succeed and i that fail, every message id and key naming i.
func batchOf(i int) (msgs []events.SQSMessage, failing []string) {
	msgs = append(msgs, order(fmt.Sprintf("m-%d-gate", i), fmt.Sprintf("gate-%d", i)))
	for j := range i + 1 {
		msgs = append(msgs, order(fmt.Sprintf("m-%d-ok-%d", i, j), fmt.Sprintf("ok-%d-%d", i, j)))
	}
	for j := range i {
		id := fmt.Sprintf("m-%d-bad-%d", i, j)
		msgs = append(msgs, order(id, fmt.Sprintf("bad-%d-%d", i, j)))
		failing = append(failing, id)
	}
	slices.Sort(failing)
	return msgs, failing
}

// TestInvocationsInOneProcess: eight invocations in flight at once in one
// process, each its own request id, deadline, failures and counts: its
// batch response lists its own failures, its log lines and its EMF line
// carry its request id and its counts, its effects run under its deadline.
func TestInvocationsInOneProcess(t *testing.T) {
	eff := newWitness(newBarrier(invocations))
	p := newProcess(t, idemtest.NewMemoryStore(), Effect{Lease: eff.lease}, nil)
	base := time.Now().Add(2 * time.Minute)
	deadline := func(i int) time.Time { return base.Add(time.Duration(i) * 10 * time.Second) }

	failed := make([][]string, invocations)
	var wg sync.WaitGroup
	for i := range invocations {
		wg.Go(func() {
			msgs, _ := batchOf(i)
			failed[i] = p.invoke(t, fmt.Sprintf("req-%d", i), deadline(i), msgs...)
		})
	}
	wg.Wait()

	for i := range invocations {
		msgs, failing := batchOf(i)
		if !slices.Equal(failed[i], failing) {
			t.Errorf("req-%d: batch item failures %v, want %v", i, failed[i], failing)
		}
		for _, m := range msgs {
			key := m.MessageAttributes["orderId"].StringValue
			runs, requestID, d := eff.ran(*key)
			want := deadline(i).Add(-p.cfg.SafetyMargin)
			if runs != 1 || requestID != fmt.Sprintf("req-%d", i) || d.Sub(want).Abs() > time.Second {
				t.Errorf("%s: ran %d times, under request %q, deadline %s; want once, under req-%d, deadline %s",
					*key, runs, requestID, d.Format(time.RFC3339Nano), i, want.Format(time.RFC3339Nano))
			}
		}
	}

	// Every line about a record carries the request id of the invocation
	// the record was handed to; each invocation has its own summary.
	type lineCounts struct{ done, failed, bodies, summaries int }
	got := map[string]*lineCounts{}
	for _, doc := range lines(t, p.logs) {
		rid := str(doc, "request_id")
		if id := str(doc, "message_id"); id != "" {
			var i int
			if _, err := fmt.Sscanf(id, "m-%d-", &i); err != nil || rid != fmt.Sprintf("req-%d", i) {
				t.Errorf("line about %s carries request id %q: %v", id, rid, doc)
			}
		}
		if rid == "" {
			continue
		}
		if got[rid] == nil {
			got[rid] = &lineCounts{}
		}
		switch str(doc, "msg") {
		case "record done":
			got[rid].done++
		case "record failed":
			got[rid].failed++
		case "failed record body":
			got[rid].bodies++
			var i int
			fmt.Sscanf(rid, "req-%d", &i)
			if !strings.Contains(str(doc, "body"), fmt.Sprintf(`"bad-%d-`, i)) {
				t.Errorf("%s logs the body of another invocation's record: %v", rid, doc)
			}
		case "batch done":
			got[rid].summaries++
			var i int
			fmt.Sscanf(rid, "req-%d", &i)
			if num(doc, "records") != 2*i+2 || num(doc, "failed") != i || num(doc, MetricExecuted) != i+2 || num(doc, MetricFailed) != i {
				t.Errorf("%s summary %v, want %d records, %d failed, %d executed", rid, doc, 2*i+2, i, i+2)
			}
		}
	}
	for i := range invocations {
		rid := fmt.Sprintf("req-%d", i)
		want := lineCounts{done: i + 2, failed: i, bodies: i, summaries: 1}
		if got[rid] == nil || *got[rid] != want {
			t.Errorf("%s lines: %+v, want %+v", rid, got[rid], want)
		}
	}

	// One EMF line per invocation, with its request id and its counts.
	emfs := map[string]int{}
	for _, doc := range lines(t, p.metrics) {
		rid := str(doc, "request_id")
		emfs[rid]++
		var i int
		if _, err := fmt.Sscanf(rid, "req-%d", &i); err != nil {
			t.Errorf("EMF line without the request id of its invocation: %v", doc)
			continue
		}
		if num(doc, MetricExecuted) != i+2 || num(doc, MetricFailed) != i || num(doc, MetricDuplicate) != 0 {
			t.Errorf("%s EMF: Executed %d, Failed %d, Duplicate %d; want %d, %d, 0",
				rid, num(doc, MetricExecuted), num(doc, MetricFailed), num(doc, MetricDuplicate), i+2, i)
		}
	}
	for i := range invocations {
		if rid := fmt.Sprintf("req-%d", i); emfs[rid] != 1 {
			t.Errorf("%s: %d EMF lines, want 1", rid, emfs[rid])
		}
	}
}

// failingComplete is a memory store whose Complete fails for the first
// call on a storage key named "held": the receipt is then owed.
type failingComplete struct {
	*idemtest.MemoryStore
	mu     sync.Mutex
	key    string // the storage key whose first Complete fails
	failed chan struct{}
	calls  int
}

var errStoreDown = errors.New("store down for one write")

func (s *failingComplete) Complete(ctx context.Context, key, lease string, c idem.Completion) error {
	s.mu.Lock()
	if key == s.key {
		s.calls++
		if s.calls == 1 {
			s.mu.Unlock()
			close(s.failed)
			return errStoreDown
		}
	}
	s.mu.Unlock()
	return s.MemoryStore.Complete(ctx, key, lease, c)
}

// TestReceiptOwedByOneInvocationWrittenByAnother: invocation A runs the
// effect of a key and cannot write its receipt (Unconfirmed: owed, its
// lease still held), and while A is still in flight invocation B of the
// same process gets a copy of the key. B writes A's receipt instead of
// running the effect again: B's copy is a Duplicate, the effect ran once,
// and every later copy is a Duplicate too.
func TestReceiptOwedByOneInvocationWrittenByAnother(t *testing.T) {
	hold := newBarrier(2) // A's "gate" record waits for the test, after B
	eff := newWitness(hold)
	g, err := idem.New(idemtest.NewMemoryStore(), DefaultNamespace)
	if err != nil {
		t.Fatal(err)
	}
	store := &failingComplete{MemoryStore: idemtest.NewMemoryStore(), key: g.StorageKey("held"), failed: make(chan struct{})}
	p := newProcess(t, store, Effect{Lease: eff.lease}, nil)
	deadline := time.Now().Add(2 * time.Minute)

	var aFailed []string
	aDone := make(chan struct{})
	go func() {
		defer close(aDone)
		aFailed = p.invoke(t, "req-A", deadline, order("m-A-held", "held"), order("m-A-gate", "gate-A"))
	}()
	<-store.failed
	// A's Complete failed; A is still in flight: its gate record waits.
	waitFor(t, func() bool { return strings.Contains(p.logs.String(), `"message_id":"m-A-held"`) })
	bFailed := p.invoke(t, "req-B", deadline, order("m-B-held", "held"))
	if err := hold.wait(t.Context()); err != nil { // lets A finish
		t.Fatal(err)
	}
	<-aDone

	if runs, rid, _ := eff.ran("held"); runs != 1 || rid != "req-A" {
		t.Fatalf("effect of held ran %d times (last under %s), want once under req-A", runs, rid)
	}
	// Unconfirmed is done (sqsbatch): the effect ran; running it again is
	// what the owed receipt prevents.
	if len(aFailed) != 0 || len(bFailed) != 0 {
		t.Fatalf("failures: A %v, B %v; want none", aFailed, bFailed)
	}
	outcome := map[string]string{}
	for _, doc := range lines(t, p.logs) {
		if id := str(doc, "message_id"); id != "" && str(doc, "outcome") != "" {
			outcome[id] = str(doc, "outcome") + " " + str(doc, "request_id")
		}
	}
	if outcome["m-A-held"] != idem.Unconfirmed.String()+" req-A" || outcome["m-B-held"] != idem.Duplicate.String()+" req-B" {
		t.Fatalf("outcomes %v; want m-A-held unconfirmed under req-A, m-B-held duplicate under req-B", outcome)
	}
	emf := map[string]map[string]any{}
	for _, doc := range lines(t, p.metrics) {
		emf[str(doc, "request_id")] = doc
	}
	if num(emf["req-A"], MetricUnconfirmed) != 1 || num(emf["req-B"], MetricDuplicate) != 1 || num(emf["req-B"], MetricExecuted) != 0 {
		t.Fatalf("EMF: A %v, B %v; want A Unconfirmed 1, B Duplicate 1", emf["req-A"], emf["req-B"])
	}
	// The receipt is in the store: a copy in another process is a
	// duplicate, not in progress under A's lease.
	other := newProcess(t, store.MemoryStore, Effect{Lease: eff.lease}, nil)
	if f := other.invoke(t, "req-C", deadline, order("m-C-held", "held")); len(f) != 0 {
		t.Fatalf("a copy in another process failed: %v", f)
	}
	if runs, _, _ := eff.ran("held"); runs != 1 {
		t.Fatalf("effect of held ran %d times, want 1", runs)
	}
}

// TestOwedReceiptUnderLoad: eight invocations of one process each get a
// copy of the same key, and the first receipt write fails; the copies that
// fail (in progress while the first ran) are delivered again, as SQS does,
// until none fails. The effect runs once.
func TestOwedReceiptUnderLoad(t *testing.T) {
	eff := newWitness(nil)
	g, err := idem.New(idemtest.NewMemoryStore(), DefaultNamespace)
	if err != nil {
		t.Fatal(err)
	}
	store := &failingComplete{MemoryStore: idemtest.NewMemoryStore(), key: g.StorageKey("held"), failed: make(chan struct{})}
	p := newProcess(t, store, Effect{Lease: eff.lease}, nil)
	deadline := time.Now().Add(2 * time.Minute)
	pending := make([]bool, invocations)
	for i := range pending {
		pending[i] = true
	}
	for round := 0; slices.Contains(pending, true); round++ {
		if round == 50 {
			t.Fatalf("copies still failing after %d rounds: %v\n%s", round, pending, p.logs.String())
		}
		var wg sync.WaitGroup
		for i := range invocations {
			if !pending[i] {
				continue
			}
			wg.Go(func() {
				rid := fmt.Sprintf("req-%d-%d", round, i)
				f := p.invoke(t, rid, deadline, order(fmt.Sprintf("m-%d", i), "held"), order(fmt.Sprintf("m-%d-own", i), fmt.Sprintf("own-%d-%d", round, i)))
				pending[i] = slices.Contains(f, fmt.Sprintf("m-%d", i))
				if slices.Contains(f, fmt.Sprintf("m-%d-own", i)) {
					t.Errorf("%s: its own record failed", rid)
				}
			})
		}
		wg.Wait()
	}
	if runs, _, _ := eff.ran("held"); runs != 1 {
		t.Fatalf("effect of held ran %d times, want 1", runs)
	}
	counts := map[string]int{}
	for _, doc := range lines(t, p.logs) {
		if strings.HasPrefix(str(doc, "message_id"), "m-") && !strings.HasSuffix(str(doc, "message_id"), "-own") {
			counts[str(doc, "outcome")]++
		}
	}
	if counts[idem.Executed.String()] != 0 || counts[idem.Unconfirmed.String()] != 1 || counts[idem.Duplicate.String()] < invocations-1 {
		t.Fatalf("outcomes of the copies %v; want one unconfirmed, no executed, the rest duplicates or in progress", counts)
	}
}

// waitFor polls cond; the test's own timeout bounds it.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-t.Context().Done():
			t.Fatal("gave up waiting")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// heldReceipts is a memory store whose first Complete waits until gate is
// closed and then fails, and whose later ones fail while down.
type heldReceipts struct {
	*idemtest.MemoryStore
	mu      sync.Mutex
	calls   int
	down    bool
	waiting chan struct{} // closed when the first Complete waits at the gate
	gate    chan struct{}
}

func (s *heldReceipts) Complete(ctx context.Context, key, lease string, c idem.Completion) error {
	s.mu.Lock()
	s.calls++
	n, down := s.calls, s.down
	s.mu.Unlock()
	if n == 1 {
		close(s.waiting)
		<-s.gate
		return errStoreDown
	}
	if down {
		return errStoreDown
	}
	return s.MemoryStore.Complete(ctx, key, lease, c)
}

func (s *heldReceipts) setDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

// leaseRunsOut waits until the lease on skey has ended.
func leaseRunsOut(t *testing.T, store *idemtest.MemoryStore, skey string) {
	t.Helper()
	waitFor(t, func() bool {
		rec, ok, err := store.Get(t.Context(), skey)
		if err != nil || !ok {
			t.Fatalf("record %s: %v, %v", skey, ok, err)
		}
		return time.Now().After(rec.LeaseUntil.Add(10 * time.Millisecond))
	})
}

// TestOwedReceiptOfTheLatestAttemptAcrossInvocations: invocation A runs a
// key's effect and its receipt write hangs; its lease runs out, and
// invocation B of the same process takes the key over, runs the effect
// again (a re-run) and cannot write its receipt either; then A's write
// fails. The process owes B's receipt, the only one that can land: a later
// copy (invocation C) writes it and is a Duplicate, and the effect has run
// twice, not three times.
func TestOwedReceiptOfTheLatestAttemptAcrossInvocations(t *testing.T) {
	eff := newWitness(nil)
	store := &heldReceipts{MemoryStore: idemtest.NewMemoryStore(), waiting: make(chan struct{}), gate: make(chan struct{})}
	p := newProcess(t, store, Effect{Lease: eff.lease}, map[string]string{EnvLease: "300ms", EnvSafetyMargin: "100ms"})
	g, err := idem.New(store, DefaultNamespace)
	if err != nil {
		t.Fatal(err)
	}
	skey := g.StorageKey("k")
	deadline := time.Now().Add(2 * time.Minute)

	aDone := make(chan []string)
	go func() { aDone <- p.invoke(t, "req-A", deadline, order("m-A", "k")) }()
	<-store.waiting
	leaseRunsOut(t, store.MemoryStore, skey)
	store.setDown(true)
	if f := p.invoke(t, "req-B", deadline, order("m-B", "k")); len(f) != 0 {
		t.Fatalf("B failed %v", f)
	}
	close(store.gate) // A's write fails now, after B's
	<-aDone
	store.setDown(false)
	leaseRunsOut(t, store.MemoryStore, skey)
	if f := p.invoke(t, "req-C", deadline, order("m-C", "k")); len(f) != 0 {
		t.Fatalf("C failed %v", f)
	}

	outcome := map[string]string{}
	for _, doc := range lines(t, p.logs) {
		if id := str(doc, "message_id"); id != "" && str(doc, "outcome") != "" {
			outcome[id] = str(doc, "outcome")
		}
	}
	runs, rid, _ := eff.ran("k")
	if runs != 2 || rid != "req-B" || outcome["m-C"] != idem.Duplicate.String() {
		t.Fatalf("effect ran %d times (last under %s), outcomes %v; want twice (A, then B's re-run), C a duplicate", runs, rid, outcome)
	}
	if outcome["m-A"] != idem.Unconfirmed.String() || outcome["m-B"] != idem.Unconfirmed.String() {
		t.Errorf("outcomes %v; want A and B unconfirmed", outcome)
	}
}
