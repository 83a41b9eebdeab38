package kit

import (
	"context"
	"fmt"
	"strconv"
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
}

// Run proves the application's consumer against its deployed stack (see
// the package documentation for the subtests). It records the stack's
// resources for NothingLeft.
func Run(t *testing.T, app App) {
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
		id: "kit" + strconv.FormatInt(time.Now().UnixMilli(), 36), start: time.Now(), want: newExpected(),
	}
	r.dlq = newDeadLetters(r.sqs, st.DeadLetterQueueURL, r.id)
	rd, err := redriveOf(ctx, r.sqs, st.QueueURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d receives of %s before the dead-letter queue", rd.maxReceives, rd.visibility)
	env, err := functionEnv(ctx, lambda.NewFromConfig(cfg), st.Function)
	r.faults = planFaults(env, err, rd.maxReceives)
	if r.faults.poison == "" {
		t.Logf("the function honours %s (%s=%s, %s=%s): the fault scenarios run", consumer.FaultAttribute,
			consumer.EnvMode, r.faults.mode, consumer.EnvUnknownOutcome, r.faults.unknown)
	}
	timeout := app.Timeout
	if timeout == 0 {
		// The crash scenarios run after the others have drained, each
		// waiting a visibility timeout for its message again.
		timeout = rd.bound() + r.faults.crashTime(rd) + DefaultMargin
	}
	t.Logf("stack %s, consumer %s (function %s, namespace %s, key %q): run %s, waits bounded by %s",
		st.Name, app.Consumer, st.Function, st.Namespace, st.Key, r.id, timeout)

	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	scs := r.scenarios()
	if app.Seed != nil {
		if err := app.Seed(sctx, st, r.all); err != nil {
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
	for _, sc := range scs {
		t.Run(sc.name, func(t *testing.T) {
			if sc.skip != "" {
				t.Skip(sc.skip)
			}
			sc.check(sctx, t)
		})
	}
	t.Run("dead-letter queue", func(t *testing.T) { r.deadLetterQueue(sctx, t) })
	mctx, mcancel := context.WithTimeout(ctx, MetricsTimeout)
	defer mcancel()
	t.Run("metrics", func(t *testing.T) { r.metrics(mctx, t) })
}

// wait calls cond every interval until it reports done, failing t when
// ctx ends first: what it waited for, and the state cond last saw.
func wait(ctx context.Context, t *testing.T, what string, interval time.Duration, cond func() (done bool, state string, err error)) {
	t.Helper()
	for {
		done, state, err := cond()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if done {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %s: %v", what, state, ctx.Err())
		case <-time.After(interval):
		}
	}
}

// waitApplied waits until the probe counts every key at least once.
func (r *run) waitApplied(ctx context.Context, t *testing.T, keys []string) {
	t.Helper()
	wait(ctx, t, fmt.Sprintf("the effect of %d keys", len(keys)), 500*time.Millisecond, func() (bool, string, error) {
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
	quiet := 0
	wait(ctx, t, "the queue to drain", time.Second, func() (bool, string, error) {
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

// checkApplied: the probe counts every key want times.
func (r *run) checkApplied(ctx context.Context, t *testing.T, keys []string, want int) {
	t.Helper()
	applied, err := r.app.Applied(ctx, r.st, keys)
	if err != nil {
		t.Fatalf("App.Applied: %v", err)
	}
	if err := timesEach(applied, keys, want); err != nil {
		t.Error(err)
	}
}
