package kit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// MetricsTimeout bounds the wait for the EMF lines once the queue has
// drained: the logs trail the invocations.
const MetricsTimeout = 2 * time.Minute

// CheckTimeout bounds each check once the queue has drained (a scenario's,
// the dead-letter queue's): what it waits for — a dead letter hidden by
// an earlier receive of the kit's, a log line — is there, or due within
// seconds. A check that waits longer fails alone, leaving the others
// their time.
const CheckTimeout = time.Minute

// run is one Run against a stack.
type run struct {
	app    App
	st     Stack
	sqs    SQSAPI
	logs   LogsAPI
	cw     AlarmsAPI
	id     string    // in every key and in AttributeRun
	all    []string  // every key of the run's scenarios (App.Seed)
	start  time.Time // EMF lines from before belong to earlier runs
	dlq    *deadLetters
	want   *expected
	faults faultPlan // what the function's environment says of the fault scenarios

	p           promise       // what the consumer promises, as its runtime said at init
	rc          receipts      // its receipt table
	retention   time.Duration // its receipts' (IDEM_RETENTION): what a settled held key keeps
	partnerSkip string        // why the partner scenarios do not run; "" runs them
	lenient     bool          // the partner may fail a Reconcile (not the kit's stub, which answers every lookup)

	mu   sync.Mutex
	held []*heldKey // keys the promise parked, for the operator
}

// Run proves the application's consumer against its deployed stack (see
// the package documentation for the subtests). It records the stack's
// resources for NothingLeft.
func Run(t *testing.T, app App) {
	t.Helper()
	ctx := t.Context()
	r, rd := start(t, app)
	timeout := app.Timeout
	if timeout == 0 {
		// The crash scenarios run after the others have drained, each
		// waiting for its message again, or until it is dead-lettered.
		timeout = rd.bound() + r.faults.crashTime(rd) + DefaultMargin
	}
	t.Logf("stack %s, consumer %s (function %s, namespace %s, key %q): run %s, waits bounded by %s",
		r.st.Name, app.Consumer, r.st.Function, r.st.Namespace, r.st.Key, r.id, timeout)

	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	scs := r.scenarios()
	if app.Seed != nil {
		if err := app.Seed(sctx, r.st, r.all); err != nil {
			t.Fatalf("App.Seed: %v", err)
		}
	}
	if !t.Run("send", func(t *testing.T) { r.sendAll(sctx, t, scs) }) {
		return
	}
	if !t.Run("drain", func(t *testing.T) { r.waitSettled(sctx, t) }) {
		return
	}
	if alone := aloneOf(scs); len(alone) > 0 {
		if !t.Run("send alone", func(t *testing.T) { r.sendAlone(sctx, t, alone) }) {
			return
		}
	}
	checked := func(name string, check func(context.Context, *testing.T)) {
		t.Run(name, func(t *testing.T) {
			cctx, cancel := context.WithTimeout(ctx, CheckTimeout)
			defer cancel()
			check(cctx, t)
		})
	}
	for _, sc := range scs {
		checked(sc.name, func(ctx context.Context, t *testing.T) {
			if sc.skip != "" {
				t.Skip(sc.skip)
			}
			if sc.check != nil {
				sc.check(ctx, t)
			}
			r.judgeKeys(ctx, t, sc.name, sc.judged)
		})
	}
	checked("dead-letter queue", r.deadLetterQueue)
	// The settled keys' messages are delivered again, once each.
	octx, ocancel := context.WithTimeout(ctx, 2*rd.visibility+time.Duration(dlqHide)*time.Second+DefaultMargin)
	defer ocancel()
	t.Run("held keys settled", func(t *testing.T) { r.settleHeld(octx, t) })
	mctx, mcancel := context.WithTimeout(ctx, MetricsTimeout)
	defer mcancel()
	t.Run("metrics", func(t *testing.T) { r.metrics(mctx, t) })
}

// start finds the consumer, records its stack, and reads what the
// deployed function says of itself: its redrive, its environment (the
// fault switches) and its promise (its init line).
func start(t *testing.T, app App) (*run, redrive) {
	t.Helper()
	if err := app.check(); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	cfg, err := awsConfig(ctx, app.AWS)
	if err != nil {
		t.Fatal(err)
	}
	st, err := discover(ctx, cloudformation.NewFromConfig(cfg), app.Stack, app.Consumer)
	if err != nil {
		t.Fatal(err)
	}
	st.AWS = cfg
	if err := remember(st); err != nil {
		t.Fatal(err)
	}
	r := &run{
		app: app, st: st, sqs: sqs.NewFromConfig(cfg), logs: cloudwatchlogs.NewFromConfig(cfg), cw: cloudwatch.NewFromConfig(cfg),
		id: runID(), start: time.Now(),
	}
	r.dlq = newDeadLetters(r.sqs, st.DeadLetterQueueURL, r.id)
	rd, err := redriveOf(ctx, r.sqs, st.QueueURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d receives of %s before the dead-letter queue", rd.maxReceives, rd.visibility)
	fn := lambda.NewFromConfig(cfg)
	env, err := functionEnv(ctx, fn, st.Function)
	if err != nil {
		t.Fatalf("%v: the kit reads the consumer's configuration from its function", err)
	}
	if r.p, err = readPromise(ctx, fn, r.logs, st.Function, st.Namespace, env); err != nil {
		t.Fatal(err)
	}
	if r.rc, err = newReceipts(cfg, st, r.p); err != nil {
		t.Fatal(err)
	}
	if r.retention, err = retentionOf(env); err != nil {
		t.Fatal(err)
	}
	r.want = newExpected(r.p)
	r.partnerSkip = partnerSkip(ctx, app, st)
	r.lenient = r.partnerSkip != ""
	r.faults = planFaults(env, rd.maxReceives)
	t.Logf("the consumer promises %s (its init line: %s=%s, %s=%s, %s=%t); the fault scenarios: %s; the partner scenarios: %s",
		r.p, consumer.ReadyMode, r.p.mode, consumer.ReadyUnknownOutcome, r.p.unknown, consumer.ReadyReconcile, r.p.reconcile,
		orRun(r.faults.poison), orRun(r.partnerSkip))
	return r, rd
}

// orRun is why a group of scenarios is skipped, or "they run".
func orRun(skip string) string {
	if skip == "" {
		return "they run"
	}
	return "skipped (" + skip + ")"
}

// runID is a run's id: its start, and a random part, so that two runs
// started at one moment (two consumers of one stack, proven in parallel
// tests) keep apart.
func runID() string {
	return "kit" + strconv.FormatInt(time.Now().UnixMilli(), 36) + strconv.FormatInt(int64(rand.IntN(36*36)), 36)
}

// retentionOf is the consumer's receipt retention (IDEM_RETENTION, the
// runtime's default when unset).
func retentionOf(env map[string]string) (time.Duration, error) {
	v := env[consumer.EnvRetention]
	if v == "" {
		return consumer.DefaultRetention, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("kit: the function's %s=%q: not a positive duration", consumer.EnvRetention, v)
	}
	return d, nil
}

// facts are what the run saw besides the EMF totals in scan: its keys'
// rerun lines, the keys held and those the operator settled done.
func (r *run) facts(scan logScan) runFacts {
	var f runFacts
	for _, k := range r.all {
		f.reruns += scan.reruns[r.rc.storageKey(k)]
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	f.held = len(r.held)
	for _, h := range r.held {
		if h.decision == "done" {
			f.settledDone++
		}
	}
	return f
}

// wait calls cond every interval until it reports done, failing t when
// ctx ends first: what it waited for, and the state cond last saw.
func wait(ctx context.Context, t *testing.T, what string, interval time.Duration, cond func() (done bool, state string, err error)) {
	t.Helper()
	if err := until(ctx, what, interval, cond); err != nil {
		t.Fatal(err)
	}
}

// until is wait's loop, its failure an error.
func until(ctx context.Context, what string, interval time.Duration, cond func() (done bool, state string, err error)) error {
	for {
		done, state, err := cond()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %s: %w", what, state, ctx.Err())
		case <-time.After(interval):
		}
	}
}

// waitApplied waits until the probe counts every key at least once.
func (r *run) waitApplied(ctx context.Context, t *testing.T, keys []string) {
	t.Helper()
	if err := r.untilApplied(ctx, keys); err != nil {
		t.Fatal(err)
	}
}

func (r *run) untilApplied(ctx context.Context, keys []string) error {
	return until(ctx, fmt.Sprintf("the effect of %d keys", len(keys)), 500*time.Millisecond, func() (bool, string, error) {
		applied, err := r.app.Applied(ctx, r.st, keys)
		if err != nil {
			return false, "", fmt.Errorf("App.Applied: %w", err)
		}
		done := 0
		for _, k := range keys {
			if applied[k] > 0 {
				done++
			}
		}
		return done == len(keys), fmt.Sprintf("%d of %d applied", done, len(keys)), nil
	})
}

// waitSettled waits until the consumer's queue is empty at two polls in a
// row: every message sent so far deleted or in the dead-letter queue.
func (r *run) waitSettled(ctx context.Context, t *testing.T) {
	t.Helper()
	if err := r.untilSettled(ctx); err != nil {
		t.Fatal(err)
	}
}

func (r *run) untilSettled(ctx context.Context) error {
	quiet := 0
	return until(ctx, "the queue to drain", time.Second, func() (bool, string, error) {
		n, err := depth(ctx, r.sqs, r.st.QueueURL)
		if err != nil {
			return false, "", err
		}
		if quiet = quiet + 1; n > 0 {
			quiet = 0
		}
		return quiet == 2, fmt.Sprintf("%d messages in the queue", n), nil
	})
}

// waitDead waits until the dead-letter queue holds the message labelled
// label.
func (r *run) waitDead(ctx context.Context, t *testing.T, label string) {
	t.Helper()
	wait(ctx, t, label+" in the dead-letter queue", 2*time.Second, func() (bool, string, error) {
		if err := r.dlq.poll(ctx); err != nil {
			return false, "", err
		}
		return r.dlq.count(label) > 0, "not there yet", nil
	})
}
