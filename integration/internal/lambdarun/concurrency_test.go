package lambdarun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// gate lets its callers go once n have arrived, or when the test gives up
// (then arrived says how many did): a harness that ran the invocations one
// at a time fails the test instead of hanging it.
type gate struct {
	n       int
	mu      sync.Mutex
	count   int
	all     chan struct{}
	giveUp  <-chan struct{}
	reached bool
}

func newGate(t *testing.T, n int) *gate {
	giveUp := make(chan struct{})
	timer := time.AfterFunc(30*time.Second, func() { close(giveUp) }) // a hang guard, not a measurement
	t.Cleanup(func() { timer.Stop() })
	return &gate{n: n, all: make(chan struct{}), giveUp: giveUp}
}

func (g *gate) wait() {
	g.mu.Lock()
	g.count++
	if g.count == g.n {
		g.reached = true
		close(g.all)
	}
	g.mu.Unlock()
	select {
	case <-g.all:
	case <-g.giveUp:
	}
}

func (g *gate) arrived() (int, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.count, g.reached
}

func startConcurrent(t *testing.T, n int) *Pool {
	t.Helper()
	bin := echoBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := Start(ctx, Function{Name: "echo", Binary: bin, Timeout: time.Minute, Concurrency: n}, 1)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(p.Stop)
	return p
}

// TestConcurrencyInOneProcess: with Concurrency N, one process takes N
// invocations at once: each of N invocations waits at a fault point until
// all N are there, and all N answer from the same process, each with its
// own request id.
func TestConcurrencyInOneProcess(t *testing.T) {
	const n = 8
	p := startConcurrent(t, n)
	g := newGate(t, n)
	p.SetFaultFunc(func(point, key string) Action {
		g.wait()
		return Continue
	})
	var wg sync.WaitGroup
	resps := make([]echoResp, n)
	for i := range n {
		wg.Go(func() {
			r, err := invoke(t, p, map[string]string{"op": "fault", "value": fmt.Sprint(i)})
			if err != nil {
				t.Errorf("invocation %d: %v", i, err)
			}
			resps[i] = r
		})
	}
	wg.Wait()
	if arrived, all := g.arrived(); !all {
		t.Fatalf("only %d of %d invocations were in flight at once", arrived, n)
	}
	ids := map[string]bool{}
	for i, r := range resps {
		if r.PID != p.PIDs()[0] || r.Value != fmt.Sprint(i) {
			t.Errorf("invocation %d: %+v; want value %d from pid %d", i, r, i, p.PIDs()[0])
		}
		ids[r.RequestID] = true
	}
	if len(ids) != n {
		t.Errorf("%d distinct request ids, want %d", len(ids), n)
	}
	r, err := invoke(t, p, map[string]string{"op": "concurrency"})
	if err != nil || r.Value != fmt.Sprint(n) {
		t.Errorf("the process sees %s=%q (%v), want %d", EnvMaxConcurrency, r.Value, err, n)
	}
	if s := p.Stats(); s.Invocations != n+1 || s.Restarts != 0 || s.Crashes != 0 || s.MaxInFlight != n {
		t.Errorf("stats %+v; want %d invocations, MaxInFlight %d", s, n+1, n)
	}
}

// TestConcurrencyKillTakesEveryInvocation: a kill at one invocation's
// fault point takes the process and every invocation in flight in it; the
// fault is that invocation's own (WithInvokeFaults), told apart from the
// others' by the request id the hook sends. The next invocation runs in a
// fresh process.
func TestConcurrencyKillTakesEveryInvocation(t *testing.T) {
	const n = 4
	p := startConcurrent(t, n)
	old := p.PIDs()[0]
	g := newGate(t, n)
	release := make(chan struct{})
	defer close(release)
	errs := make([]error, n)
	var called sync.Map
	var wg sync.WaitGroup
	for i := range n {
		ctx := WithInvokeFaults(context.Background(), InvokeFaults{Fault: func(point, key string) Action {
			called.Store(i, key)
			g.wait()
			if i == 0 {
				return Kill
			}
			<-release // in flight until the kill
			return Continue
		}})
		wg.Go(func() {
			payload, _ := json.Marshal(map[string]string{"op": "fault", "value": fmt.Sprint(i)})
			_, errs[i] = p.Invoke(ctx, payload)
		})
	}
	wg.Wait()
	if arrived, all := g.arrived(); !all {
		t.Fatalf("only %d of %d invocations were in flight at once", arrived, n)
	}
	for i, err := range errs {
		if key, _ := called.Load(i); key != fmt.Sprint(i) {
			t.Errorf("invocation %d's fault function saw key %v, want its own", i, key)
		}
		if !errors.Is(err, ErrCrashed) || !strings.Contains(err.Error(), "before-commit") {
			t.Errorf("invocation %d: %v; want ErrCrashed at before-commit", i, err)
		}
	}
	r, err := invoke(t, p, map[string]string{"op": "echo", "value": "after"})
	if err != nil || r.PID == old || r.Value != "after" {
		t.Fatalf("after the kill: %+v, %v (old pid %d)", r, err, old)
	}
	if s := p.Stats(); s.Crashes != n || s.Restarts != 1 || s.FaultKills != 1 {
		t.Errorf("stats %+v; want %d crashes, 1 restart, 1 fault kill", s, n)
	}
}

// TestConcurrencyFromEnv: Concurrency 0 takes AWS_LAMBDA_MAX_CONCURRENCY
// from the function's environment; without either, the process does not
// see the variable and runs one invocation at a time.
func TestConcurrencyFromEnv(t *testing.T) {
	bin := echoBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := Start(ctx, Function{Name: "echo", Binary: bin, Env: map[string]string{EnvMaxConcurrency: "3"}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	if got := p.Function().Concurrency; got != 3 {
		t.Errorf("Concurrency %d, want 3", got)
	}
	single := start(t, 3*time.Second, 1)
	r, err := invoke(t, single, map[string]string{"op": "concurrency"})
	if err != nil || r.Value != "" || single.Function().Concurrency != 1 {
		t.Errorf("default: the process sees %q (%v), Concurrency %d; want unset, 1", r.Value, err, single.Function().Concurrency)
	}
}
