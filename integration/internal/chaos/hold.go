package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/exactlyonce/sqsidem/integration/internal/esm"
	"github.com/exactlyonce/sqsidem/integration/internal/system"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// Operator does what the runbook tells an operator to do with held keys,
// with the operator's tool (cmd/idemctl, run as a process) and the
// partner's own answer: list the held records, look each key up at the
// partner, and resolve it — --done when the partner has its effect,
// --not-done when it has not.
type Operator struct {
	Idemctl string   // the binary
	Env     []string // its environment: the endpoints, dummy credentials
	Flags   []string // --table, --namespace
	// Partner is the partner's base URL: GET Partner/effects/<key>
	// answers 200 when the key's effect took place, 404 when not.
	Partner string
	// Parallel is how many keys are settled at once (default 4).
	Parallel int

	client  http.Client
	lookups atomic.Int64
}

// NewOperator returns the operator of system s, whose receipts are on
// DynamoDB at dynamoURL.
func NewOperator(idemctl string, s *system.System, dynamoURL, sqsURL string) *Operator {
	ns := s.Consumer.Function().Env[consumer.EnvNamespace]
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(),
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_REGION=" + s.Stack.Region,
		"AWS_CONFIG_FILE=" + os.DevNull, "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull, "AWS_EC2_METADATA_DISABLED=true",
		"AWS_ENDPOINT_URL_DYNAMODB=" + dynamoURL, "AWS_ENDPOINT_URL_SQS=" + sqsURL,
	}
	flags := []string{"--table", s.Receipts, "--output", "json"}
	if ns != "" {
		flags = append(flags, "--namespace", ns)
	}
	return &Operator{Idemctl: idemctl, Env: env, Flags: flags, Partner: s.Partner.URL()}
}

// Lookups returns how many times the operator asked the partner.
func (o *Operator) Lookups() int { return int(o.lookups.Load()) }

func (o *Operator) idemctl(ctx context.Context, v any, args ...string) error {
	cmd := exec.CommandContext(ctx, o.Idemctl, append(args, o.Flags...)...)
	cmd.Env = o.Env
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("idemctl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	if err := json.Unmarshal(out.Bytes(), v); err != nil {
		return fmt.Errorf("idemctl %s: its answer %q: %w", strings.Join(args, " "), out.String(), err)
	}
	return nil
}

// Held lists the storage keys of the held records (idemctl list --status
// held).
func (o *Operator) Held(ctx context.Context) ([]string, error) {
	var v struct {
		Matched int `json:"matched"`
		Records []struct {
			StorageKey string `json:"storageKey"`
			State      string `json:"state"`
		} `json:"records"`
	}
	if err := o.idemctl(ctx, &v, "list", "--status", "held", "--limit", "0"); err != nil {
		return nil, err
	}
	if len(v.Records) != v.Matched {
		return nil, fmt.Errorf("idemctl list: %d records shown of %d matched", len(v.Records), v.Matched)
	}
	out := make([]string, 0, len(v.Records))
	for _, r := range v.Records {
		out = append(out, r.StorageKey)
	}
	return out, nil
}

// Lookup asks the partner whether key's effect took place.
func (o *Operator) Lookup(ctx context.Context, key string) (bool, error) {
	o.lookups.Add(1)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(o.Partner, "/")+"/effects/"+url.PathEscape(key), nil)
	if err != nil {
		return false, err
	}
	resp, err := o.client.Do(req)
	if err != nil {
		return false, fmt.Errorf("look %s up at the partner: %w", key, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	switch resp.StatusCode {
	case http.StatusOK:
		return true, nil
	case http.StatusNotFound:
		return false, nil
	}
	return false, fmt.Errorf("look %s up at the partner: %s", key, resp.Status)
}

// Resolve settles key: idemctl resolve KEY --done or --not-done --yes. A
// held record must be written.
func (o *Operator) Resolve(ctx context.Context, key string, done bool) error {
	flag := "--not-done"
	if done {
		flag = "--done"
	}
	var v struct {
		Written bool   `json:"written"`
		Note    string `json:"note"`
		Before  struct {
			State string `json:"state"`
		} `json:"before"`
	}
	if err := o.idemctl(ctx, &v, "resolve", key, flag, "--yes"); err != nil {
		return err
	}
	if !v.Written {
		return fmt.Errorf("idemctl resolve %s %s: nothing written (%s): %s", key, flag, v.Before.State, v.Note)
	}
	return nil
}

// Resolution is what became of the hold policy's held keys.
type Resolution struct {
	Held       int // keys held when the queue drained
	HeldPoison int // of them poison keys: resolved, never sent again (they fail every time)
	// Done and NotDone are the resolutions, by the partner's answer;
	// Again those of a key held again after it was sent once more.
	Done, NotDone, Again int
	Redriven             int // not-done keys sent once more
	Rounds               int // resolve-and-send rounds (1: every key sent once more was applied)
	AppliedOnce          int // held keys (poison aside) applied exactly once in the end
	AppliedAfter         int // keys (poison aside) applied after the resolution, held or not
	Lookups              int // the operator's lookups at the partner
	Took                 time.Duration
	Problems             []string
}

// maxRounds bounds the rounds of resolving and sending again: a key sent
// once more can meet the machine's load (a deadline) and be held again.
const maxRounds = 3

// resolver settles the held keys of a hold-policy run once its queue has
// drained, as the runbook says: each held key looked up at the partner and
// resolved, each not-done one sent once more (its dead letter's body, as a
// redrive would) and consumed, with every fault off; then every held key
// must be applied exactly once.
type resolver struct {
	sys     *system.System
	op      *Operator
	plan    Plan
	held    []string          // keys
	bodies  map[string]string // key → a dead letter's body
	pollers int
	drain   time.Duration
}

func (r *resolver) run(ctx context.Context) *Resolution {
	began := time.Now()
	res := &Resolution{Held: len(r.held)}
	for _, k := range r.held {
		if r.plan.Poison[k] {
			res.HeldPoison++
		}
	}
	pending := r.held
	resolved := map[string]bool{}
	for round := 1; round <= maxRounds && len(pending) > 0; round++ {
		res.Rounds = round
		if round > 1 {
			again, err := r.heldNow(ctx, pending)
			if err != nil {
				res.Problems = append(res.Problems, "resolution: "+err.Error())
				break
			}
			pending = again
		}
		var resend []string
		var mu sync.Mutex
		errs := r.each(ctx, pending, func(key string) error {
			applied, err := r.op.Lookup(ctx, key)
			if err != nil {
				return err
			}
			if err := r.op.Resolve(ctx, key, applied); err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case resolved[key]:
				res.Again++
			case applied:
				res.Done++
			default:
				res.NotDone++
			}
			resolved[key] = true
			if !applied && !r.plan.Poison[key] {
				resend = append(resend, key)
			}
			return nil
		})
		for _, err := range errs {
			res.Problems = append(res.Problems, "resolution: "+err.Error())
		}
		if len(resend) == 0 {
			break
		}
		slices.Sort(resend)
		if round == 1 {
			res.Redriven = len(resend)
		}
		if err := r.send(ctx, resend); err != nil {
			res.Problems = append(res.Problems, "resolution: send again: "+err.Error())
			break
		}
		applied, err := r.sys.Applied(ctx, resend)
		if err != nil {
			res.Problems = append(res.Problems, "resolution: "+err.Error())
			break
		}
		pending = nil
		for _, k := range resend {
			if applied[k] == 0 {
				pending = append(pending, k)
			}
		}
	}
	res.Problems = append(res.Problems, r.check(ctx, res)...)
	res.Lookups, res.Took = r.op.Lookups(), time.Since(began)
	return res
}

// heldNow returns keys whose record is held again, and sends the others
// once more: sent again and not applied, not held (a definite failure, a
// store error on every receive), they need only another delivery.
func (r *resolver) heldNow(ctx context.Context, keys []string) ([]string, error) {
	skeys, err := r.op.Held(ctx)
	if err != nil {
		return nil, err
	}
	held := map[string]bool{}
	for _, sk := range skeys {
		held[sk] = true
	}
	var again, other []string
	for _, k := range keys {
		if held[r.sys.StorageKey(k)] {
			again = append(again, k)
		} else {
			other = append(other, k)
		}
	}
	if len(other) > 0 {
		if err := r.send(ctx, other); err != nil {
			return nil, err
		}
	}
	return again, nil
}

// check: in the end every held key (poison aside) is applied exactly once.
func (r *resolver) check(ctx context.Context, res *Resolution) []string {
	applied, err := r.sys.Applied(ctx, r.held)
	if err != nil {
		return []string{"resolution: " + err.Error()}
	}
	once, notOnce := appliedOnce(r.held, r.plan.Poison, applied)
	res.AppliedOnce = once
	if len(notOnce) > 0 {
		return []string{fmt.Sprintf("%d held keys not applied exactly once after their resolution: %s", len(notOnce), head(notOnce))}
	}
	return nil
}

// appliedOnce counts the held keys applied exactly once, and names the
// others (poison keys aside: they never are).
func appliedOnce(held []string, poison map[string]bool, applied map[string]int) (once int, notOnce []string) {
	for _, k := range held {
		switch n := applied[k]; {
		case poison[k]:
		case n == 1:
			once++
		default:
			notOnce = append(notOnce, fmt.Sprintf("%s ×%d", k, n))
		}
	}
	return once, notOnce
}

// appliedAgain names the keys applied more than once after (the
// resolution) that were not before.
func appliedAgain(keys []string, before, after map[string]int) []string {
	var out []string
	for _, k := range keys {
		if after[k] > 1 && before[k] <= 1 {
			out = append(out, fmt.Sprintf("%s ×%d", k, after[k]))
		}
	}
	return out
}

// each runs fn for every key, Parallel at a time, and returns the errors.
func (r *resolver) each(ctx context.Context, keys []string, fn func(string) error) []error {
	par := r.op.Parallel
	if par <= 0 {
		par = 4
	}
	sem := make(chan struct{}, par)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := fn(k); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 10 {
		errs = append(errs[:10], fmt.Errorf("… and %d more", len(errs)-10))
	}
	return errs
}

// send sends each key once more, with its dead letter's body, and waits
// for the queue to drain under pollers of its own that invoke the
// consumers directly: no kill, no zombie.
func (r *resolver) send(ctx context.Context, keys []string) error {
	msgs := make([]system.Message, 0, len(keys))
	for _, k := range keys {
		body, ok := r.bodies[k]
		if !ok {
			m, err := r.sys.Message(k, 0)
			if err != nil {
				return err
			}
			body = string(m.Body)
		}
		msgs = append(msgs, system.Message{Key: k, Body: []byte(body)})
	}
	if err := r.sys.SendRaw(ctx, msgs...); err != nil {
		return err
	}
	s := r.sys
	poller := &esm.Poller{
		Client: s.SQS, QueueURL: s.Queue.URL, QueueARN: s.Queue.ARN, Region: s.Stack.Region,
		BatchSize: s.Mapping.BatchSize, MaxConcurrency: max(r.pollers, 1), WaitTime: time.Second,
		Invoker: s.Consumer, ReportBatchItemFailures: s.Mapping.ReportBatchItemFailures,
	}
	pctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = poller.Run(pctx)
	}()
	dctx, cancel := context.WithTimeout(ctx, r.drain)
	err := s.WaitIdle(dctx, nil)
	cancel()
	stop()
	<-done
	if err != nil {
		return fmt.Errorf("the keys sent once more did not drain: %w", err)
	}
	return nil
}

// heldKeys maps the storage keys idemctl listed back to keys; storage
// keys of no key of the plan are returned apart.
func heldKeys(skeys []string, keyOf map[string]string) (held map[string]bool, strangers []string) {
	held = map[string]bool{}
	for _, sk := range skeys {
		if k, ok := keyOf[sk]; ok {
			held[k] = true
		} else {
			strangers = append(strangers, sk)
		}
	}
	return held, strangers
}

// ErrNoIdemctl: a hold-policy run was asked for without the operator's
// tool to settle its held keys.
var ErrNoIdemctl = errors.New("chaos: the hold policy needs idemctl (Config.Idemctl) to resolve its held keys")
