package lambdarun

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func invokeWith(t *testing.T, p *Pool, f InvokeFaults, req map[string]string) error {
	t.Helper()
	payload, _ := json.Marshal(req)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := p.Invoke(WithInvokeFaults(ctx, f), payload)
	return err
}

func TestInvokeFaultsOverridePoolFunc(t *testing.T) {
	p := start(t, 3*time.Second, 1)
	p.SetFaultFunc(func(point, key string) Action { return Kill })
	var seen string
	own := InvokeFaults{Fault: func(point, key string) Action { seen = point + "/" + key; return Continue }}
	if err := invokeWith(t, p, own, map[string]string{"op": "fault", "value": "k1"}); err != nil {
		t.Fatalf("the invocation's own fault func says continue: %v", err)
	}
	if seen != "before-commit/k1" {
		t.Fatalf("own fault func saw %q", seen)
	}
	// Without its own func, the pool's applies again.
	if _, err := invoke(t, p, map[string]string{"op": "fault", "value": "k2"}); !errors.Is(err, ErrCrashed) {
		t.Fatalf("pool fault func: want ErrCrashed, got %v", err)
	}
}

func TestInvokeFaultsKillAfter(t *testing.T) {
	p := start(t, 3*time.Second, 1)
	old := p.PIDs()[0]
	err := invokeWith(t, p, InvokeFaults{KillAfter: 50 * time.Millisecond}, map[string]string{"op": "sleep", "sleep": "2s"})
	if !errors.Is(err, ErrCrashed) || !strings.Contains(err.Error(), PointKillAfter) {
		t.Fatalf("want ErrCrashed at %s, got %v", PointKillAfter, err)
	}
	// An invocation that answers first is not killed, and the timer does
	// not outlive it.
	if err := invokeWith(t, p, InvokeFaults{KillAfter: 300 * time.Millisecond}, map[string]string{"op": "echo", "value": "v"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	r, err := invoke(t, p, map[string]string{"op": "echo", "value": "v"})
	if err != nil || r.PID == old {
		t.Fatalf("after the kill: %+v %v", r, err)
	}
	if s := p.Stats(); s.Crashes != 1 || s.FaultPoints[PointKillAfter].Kills != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestFunctionCopy(t *testing.T) {
	p := start(t, 3*time.Second, 1)
	fn := p.Function()
	fn.Env["ECHO_ENV"] = "changed"
	if p.Function().Env["ECHO_ENV"] != "from-env" || fn.Timeout != 3*time.Second || fn.Name != "echo" {
		t.Fatalf("Function: %+v, pool's env changed to %q", fn, p.Function().Env["ECHO_ENV"])
	}
}
