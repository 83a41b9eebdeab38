package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/integration/internal/lambdarun"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// echoBinary builds lambdarun's test function.
func echoBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bootstrap")
	if out, err := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", bin, "../lambdarun/testdata/echo").CombinedOutput(); err != nil {
		t.Fatalf("build echo: %v\n%s", err, out)
	}
	return bin
}

// echoBatch is an SQS event of one record of key that the echo function
// reads as its request (op, sleep); it ignores the records.
func echoBatch(t *testing.T, key, op, sleep string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"Records": []events.SQSMessage{{MessageId: "m-" + key, Body: `{"ref":"` + key + `"}`}},
		"op":      op, "value": key, "sleep": sleep,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// inFlight starts an invocation of each key on one process of v.Main,
// each held at the echo's fault point (the pool's fault function, as none
// of them is doomed) until the test ends, and returns once all are there,
// waiting gap after each. The invocations' errors arrive on the channel.
func inFlight(t *testing.T, ctx context.Context, v *Invoker, gap time.Duration, keys ...string) <-chan error {
	t.Helper()
	arrived, release := make(chan string, len(keys)), make(chan struct{})
	t.Cleanup(func() { close(release) })
	v.Main.SetFaultFunc(func(point, key string) lambdarun.Action {
		arrived <- key
		<-release
		return lambdarun.Continue
	})
	errs := make(chan error, len(keys))
	for _, k := range keys {
		go func() {
			_, err := v.Invoke(ctx, echoBatch(t, k, "fault", ""))
			errs <- err
		}()
		select {
		case <-arrived:
		case <-ctx.Done():
			t.Fatalf("invocation %s never reached its fault point: %v", k, ctx.Err())
		}
		time.Sleep(gap)
	}
	return errs
}

func perProcessPool(t *testing.T, ctx context.Context, bin string, timeout time.Duration, n int) *lambdarun.Pool {
	t.Helper()
	p, err := lambdarun.Start(ctx, lambdarun.Function{Name: "consumer", Binary: bin, Timeout: timeout, Concurrency: n}, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// byKey is each key's events, by kind.
func byKey(evs []Event) map[string][]string {
	out := map[string][]string{}
	for _, e := range evs {
		for _, k := range e.Batch {
			out[k] = append(out[k], e.Kind)
		}
	}
	return out
}

// TestKillTakesTheProcessInvocations: with four invocations in one
// process, a mid-batch kill planned for one takes the other three with
// it, and each of those is an event with its own batch (EventProcess:
// what explains a double effect of its keys), not a crash of its own and
// not the doomed invocation's kill.
func TestKillTakesTheProcessInvocations(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // a hang guard, not a measurement
	defer cancel()
	v := &Invoker{Main: perProcessPool(t, ctx, echoBinary(t), time.Minute, 4), Key: "ref", Events: &Events{}, Seed: 1}
	v.init()
	errs := inFlight(t, ctx, v, 0, "o-1", "o-2", "o-3")
	v.requeue(lambdarun.PointKillAfter) // the next invocation's plan
	if _, err := v.Invoke(ctx, echoBatch(t, "o-4", "sleep", "1m")); !errors.Is(err, lambdarun.ErrCrashed) {
		t.Fatalf("the doomed invocation: %v, want ErrCrashed", err)
	}
	for range 3 {
		if err := <-errs; !errors.Is(err, lambdarun.ErrCrashed) {
			t.Errorf("an invocation of the killed process: %v, want ErrCrashed", err)
		}
	}
	got := byKey(v.Events.All())
	want := map[string][]string{"o-1": {EventProcess}, "o-2": {EventProcess}, "o-3": {EventProcess}, "o-4": {EventKill}}
	for k, kinds := range want {
		if !slices.Equal(got[k], kinds) {
			t.Errorf("%s: events %v, want %v (all: %+v)", k, got[k], kinds, v.Events.All())
		}
	}
	for _, e := range v.Events.All() {
		if e.Kind == EventProcess {
			if c := e.cause(e.Batch[0]); c.Class != ClassKillProcess {
				t.Errorf("cause of %+v: %q", e, c.Class)
			}
		}
	}
}

// TestTimeoutTakesTheProcessInvocations: the invocation that runs out of
// its time is the harness's timeout; the others of its process die with
// it (or time out themselves, should the machine be slow to kill): never
// a crash of their own.
func TestTimeoutTakesTheProcessInvocations(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	v := &Invoker{Main: perProcessPool(t, ctx, echoBinary(t), 3*time.Second, 3), Key: "ref", Events: &Events{}, Seed: 1}
	v.init()
	errs := inFlight(t, ctx, v, time.Second, "o-1", "o-2", "o-3")
	for range 3 {
		<-errs
	}
	kinds := map[string]int{}
	for k, ks := range byKey(v.Events.All()) {
		if len(ks) != 1 || (ks[0] != EventTimeout && ks[0] != EventProcess) {
			t.Errorf("%s: events %v, want one timeout or one killed with its process", k, ks)
		}
		kinds[ks[0]]++
	}
	if kinds[EventTimeout] < 1 || kinds[EventTimeout]+kinds[EventProcess] != 3 {
		t.Errorf("events by kind %v, want a timeout and the others killed with the process", kinds)
	}
	t.Logf("events by kind: %v", kinds)
}

// TestReportPerProcess: a run of several invocations per process says so
// in its column, its section and its processes line, and counts the
// invocations killed with their process and the doubles they explain.
func TestReportPerProcess(t *testing.T) {
	r := &Result{Mode: consumer.ModeLease, Policy: PolicyReconcile, Keys: 10, PerProcess: 8, Processes: 1, Invocations: 20,
		Events: []Event{{Kind: EventKill, Point: PointAfterEffect, Key: "o-1", Batch: []string{"o-1"}}, {Kind: EventProcess, Batch: []string{"o-2"}}},
		Account: Account{LeaseMode: true, Policy: PolicyReconcile, DoubleEffects: 1,
			Doubled: []Double{{Key: "o-2", Applied: 2, Causes: []Cause{Event{Kind: EventProcess}.cause("o-2")}}}}}
	one := &Result{Mode: consumer.ModeTransactional, Keys: 10, PerProcess: 1, Processes: 8}
	var b bytes.Buffer
	WriteReport(&b, Header{Title: "Chaos run"}, []*Result{r, one})
	for _, want := range []string{
		"| | lease/reconcile ×8 | transactional |",
		"| consumer processes × invocations at once | 1 × 8 (AWS_LAMBDA_MAX_CONCURRENCY=8) | 8 × 1 |",
		"## lease mode, reconcile policy, 8 invocations per process",
		"- killed with their process (another invocation in it killed or timed out): 1 invocations",
		"kill, same process 1",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(b.String(), "## transactional mode, ") {
		t.Error("the one-per-process run's section names invocations per process")
	}
}
