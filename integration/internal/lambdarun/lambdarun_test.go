package lambdarun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// echoBinary builds testdata/echo once per test binary, the same way the
// integration suite builds the real functions.
func echoBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "lambdarun-echo")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", filepath.Join(buildDir, "bootstrap"), "./testdata/echo")
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = errors.New(err.Error() + ": " + string(out))
		}
	})
	if buildErr != nil {
		t.Fatalf("build echo: %v", buildErr)
	}
	return filepath.Join(buildDir, "bootstrap")
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type echoResp struct {
	Value      string `json:"value"`
	DeadlineMs int64  `json:"deadlineMs"`
	RequestID  string `json:"requestId"`
	PID        int    `json:"pid"`
	Function   string `json:"function"`
	Env        string `json:"env"`
}

func start(t *testing.T, timeout time.Duration, n int, opts ...Option) *Pool {
	t.Helper()
	bin := echoBinary(t) // before the start's deadline: a cold build cache takes its time
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := Start(ctx, Function{Name: "echo", Binary: bin, Timeout: timeout, MemoryMB: 256, Env: map[string]string{"ECHO_ENV": "from-env"}}, n, opts...)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(p.Stop)
	return p
}

func invoke(t *testing.T, p *Pool, req map[string]string) (echoResp, error) {
	t.Helper()
	payload, _ := json.Marshal(req)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := p.Invoke(ctx, payload)
	var r echoResp
	if err == nil {
		if jerr := json.Unmarshal(out, &r); jerr != nil {
			t.Fatalf("bad response %q: %v", out, jerr)
		}
	}
	return r, err
}

func TestInvokeResponse(t *testing.T) {
	logs := &syncBuf{}
	p := start(t, 3*time.Second, 1, WithLog(logs))
	r, err := invoke(t, p, map[string]string{"op": "echo", "value": "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Value != "hello" || r.Function != "echo" || r.Env != "from-env" || len(r.RequestID) != 36 {
		t.Fatalf("unexpected response %+v", r)
	}
	if r.PID != p.PIDs()[0] {
		t.Fatalf("pid %d, pool says %v", r.PID, p.PIDs())
	}
	if s := p.Stats(); s.Invocations != 1 || s.Errors != 0 || s.Restarts != 0 || s.MaxInFlight != 1 {
		t.Fatalf("stats %+v", s)
	}
	if !strings.Contains(logs.String(), "echo#0 started pid") {
		t.Fatalf("log missing harness line:\n%s", logs.String())
	}
}

func TestFunctionError(t *testing.T) {
	logs := &syncBuf{}
	p := start(t, 3*time.Second, 1, WithLog(logs))
	pid := p.PIDs()[0]
	_, err := invoke(t, p, map[string]string{"op": "error", "value": "boom"})
	var fe *FunctionError
	if !errors.As(err, &fe) || fe.Message != "boom" || fe.Type != "errorString" {
		t.Fatalf("want FunctionError boom/errorString, got %v (%#v)", err, fe)
	}
	// A returned error keeps the environment, as in Lambda.
	r, err := invoke(t, p, map[string]string{"op": "echo", "value": "again"})
	if err != nil || r.PID != pid {
		t.Fatalf("after error: %+v %v (pid %d)", r, err, pid)
	}
	if s := p.Stats(); s.Errors != 1 {
		t.Fatalf("stats %+v", s)
	}
	// aws-lambda-go logs the error payload to stderr; it must reach our log,
	// prefixed. The pipe is copied asynchronously, so allow it a moment.
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		l := logs.String()
		if strings.Contains(l, "[echo#0 pid=") && strings.Contains(l, "boom") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("function output not logged:\n%s", l)
		}
	}
}

func TestDeadlinePropagation(t *testing.T) {
	const timeout = 2 * time.Second
	p := start(t, timeout, 1)
	before := time.Now()
	r, err := invoke(t, p, map[string]string{"op": "deadline"})
	after := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := before.Add(timeout).UnixMilli()-1, after.Add(timeout).UnixMilli()+1
	if r.DeadlineMs < lo || r.DeadlineMs > hi {
		t.Fatalf("handler deadline %d not in [%d, %d]", r.DeadlineMs, lo, hi)
	}
}

func TestTimeoutKillsAndRestarts(t *testing.T) {
	p := start(t, 300*time.Millisecond, 1)
	old := p.PIDs()[0]
	begin := time.Now()
	_, err := invoke(t, p, map[string]string{"op": "sleep", "sleep": "10s"})
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("want ErrTimeout, got %v", err)
	}
	if d := time.Since(begin); d > 2*time.Second {
		t.Fatalf("timeout took %s", d)
	}
	if syscall.Kill(old, 0) == nil {
		t.Fatalf("old pid %d still alive", old)
	}
	r, err := invoke(t, p, map[string]string{"op": "echo", "value": "fresh"})
	if err != nil || r.Value != "fresh" || r.PID == old {
		t.Fatalf("after restart: %+v %v (old pid %d)", r, err, old)
	}
	if s := p.Stats(); s.Timeouts != 1 || s.Restarts != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestFaultKill(t *testing.T) {
	p := start(t, 3*time.Second, 1)
	p.SetFaultFunc(func(point, key string) Action {
		if point == "before-commit" && key == "die" {
			return Kill
		}
		return Continue
	})
	old := p.PIDs()[0]
	_, err := invoke(t, p, map[string]string{"op": "fault", "value": "die"})
	if !errors.Is(err, ErrCrashed) || !strings.Contains(err.Error(), "before-commit") {
		t.Fatalf("want ErrCrashed at before-commit, got %v", err)
	}
	r, err := invoke(t, p, map[string]string{"op": "fault", "value": "live"})
	if err != nil || r.PID == old {
		t.Fatalf("after fault kill: %+v %v", r, err)
	}
	s := p.Stats()
	if s.FaultCalls != 2 || s.FaultKills != 1 || s.Crashes != 1 || s.Restarts != 1 ||
		s.FaultPoints["before-commit"] != (FaultCount{Calls: 2, Kills: 1}) {
		t.Fatalf("stats %+v", s)
	}
}

// TestFreezeUntil: a process frozen at a fault point stays stopped, its
// invocation unanswered, until the release channel is closed, however long
// that takes; then it answers.
func TestFreezeUntil(t *testing.T) {
	p := start(t, 20*time.Second, 1)
	release := make(chan struct{})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	p.SetFreeze(time.Millisecond) // SetFreezeUntil wins over it
	p.SetFreezeUntil(release)
	frozen := make(chan struct{})
	p.SetFaultFunc(func(point, key string) Action {
		if key == "stall" {
			close(frozen)
			return Freeze
		}
		return Continue
	})
	type answer struct {
		r   echoResp
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		payload, _ := json.Marshal(map[string]string{"op": "fault", "value": "stall"})
		out, err := p.Invoke(context.Background(), payload)
		var r echoResp
		if err == nil {
			err = json.Unmarshal(out, &r)
		}
		answered <- answer{r, err}
	}()
	select {
	case <-frozen:
	case <-time.After(20 * time.Second):
		t.Fatal("waiting for the fault point: never reached")
	}
	select {
	case a := <-answered:
		t.Fatalf("answered while frozen: %+v", a)
	case <-time.After(500 * time.Millisecond): // many times the 1 ms freeze duration
	}
	close(release)
	select {
	case a := <-answered:
		if a.err != nil || a.r.Value != "stall" {
			t.Fatalf("after the release: %+v", a)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("waiting for the answer after the release: none")
	}
}

func TestProcessExitAndPanic(t *testing.T) {
	p := start(t, 3*time.Second, 1)
	if _, err := invoke(t, p, map[string]string{"op": "exit"}); !errors.Is(err, ErrCrashed) {
		t.Fatalf("want ErrCrashed, got %v", err)
	}
	// aws-lambda-go reports a panic as an error and then exits; the idle
	// instance must come back by itself.
	_, err := invoke(t, p, map[string]string{"op": "panic", "value": "oops"})
	var fe *FunctionError
	if !errors.As(err, &fe) || fe.Message != "oops" {
		t.Fatalf("want FunctionError oops, got %v", err)
	}
	for range 3 {
		if r, err := invoke(t, p, map[string]string{"op": "echo", "value": "ok"}); err != nil || r.Value != "ok" {
			t.Fatalf("after panic: %+v %v", r, err)
		}
	}
	if s := p.Stats(); s.Restarts != 2 || s.Crashes != 1 || s.Errors != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestConcurrentInstances(t *testing.T) {
	const n, per = 3, 3
	p := start(t, 5*time.Second, n)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		pids = map[int]int{}
	)
	begin := time.Now()
	for range n * per {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := p.Invoke(context.Background(), []byte(`{"op":"sleep","sleep":"300ms"}`))
			var r echoResp
			if err == nil {
				err = json.Unmarshal(out, &r)
			}
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			pids[r.PID]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(begin)
	// One invocation per instance at a time: 9 x 300ms on 3 instances take
	// at least 900ms (no upper bound: a loaded machine may take any time).
	if elapsed < per*300*time.Millisecond {
		t.Fatalf("elapsed %s", elapsed)
	}
	if len(pids) != n {
		t.Fatalf("want %d distinct instances, got %v", n, pids)
	}
	for pid, c := range pids {
		if c != per {
			t.Fatalf("pid %d ran %d invocations, want %d (one at a time): %v", pid, c, per, pids)
		}
	}
}

func TestInvokeWaitsForFreeInstance(t *testing.T) {
	p := start(t, 5*time.Second, 1)
	go p.Invoke(context.Background(), []byte(`{"op":"sleep","sleep":"500ms"}`))
	time.Sleep(100 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := p.Invoke(ctx, []byte(`{"op":"echo"}`)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want DeadlineExceeded while busy, got %v", err)
	}
}

func TestStop(t *testing.T) {
	p := start(t, 3*time.Second, 2)
	pids := p.PIDs()
	p.Stop()
	p.Stop()
	for _, pid := range pids {
		if syscall.Kill(pid, 0) == nil {
			t.Fatalf("pid %d alive after Stop", pid)
		}
	}
	if _, err := p.Invoke(context.Background(), []byte(`{}`)); !errors.Is(err, ErrStopped) {
		t.Fatalf("want ErrStopped, got %v", err)
	}
}

func TestStartMissingBinary(t *testing.T) {
	if _, err := Start(context.Background(), Function{Name: "x", Binary: filepath.Join(t.TempDir(), "nope")}, 1); err == nil {
		t.Fatal("want error")
	}
}

func BenchmarkInvoke(b *testing.B) {
	bin := echoBinary(b)
	p, err := Start(context.Background(), Function{Name: "echo", Binary: bin}, 1)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Stop()
	payload := []byte(`{"op":"echo","value":"x"}`)
	b.ResetTimer()
	for b.Loop() {
		if _, err := p.Invoke(context.Background(), payload); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkColdStart(b *testing.B) {
	bin := echoBinary(b)
	for b.Loop() {
		p, err := Start(context.Background(), Function{Name: "echo", Binary: bin}, 1)
		if err != nil {
			b.Fatal(err)
		}
		p.Stop()
	}
}
