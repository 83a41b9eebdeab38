package main

// Tests of faults.go; a fork deletes this file with it.

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/exactlyonce/sqsidem/functions/internal/envconfig"
)

// newFaultHarness builds the consumer as main does, fault wrapper included.
func newFaultHarness(t *testing.T, env map[string]string) *harness {
	t.Helper()
	f, err := loadFaults(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return newWrappedHarness(t, env, func(e Effect, log *slog.Logger) Effect { return f.wrap(e, http.DefaultClient, log) })
}

func TestLoadFaults(t *testing.T) {
	env := map[string]string{
		"FAULT_EFFECT_FAIL_KEYS": "a, b", "FAULT_EFFECT_FAIL_TIMES": "2",
		"FAULT_HOOK_URL": "http://localhost:9/h", "FAULT_POISON": "true",
	}
	f, err := loadFaults(func(k string) string { return env[k] })
	want := Faults{HookURL: "http://localhost:9/h", FailKeys: map[string]bool{"a": true, "b": true}, FailTimes: 2, Poison: true}
	if err != nil || !reflect.DeepEqual(f, want) {
		t.Errorf("faults = %+v, %v\nwant %+v", f, err, want)
	}
	if f, err := loadFaults(func(string) string { return "" }); err != nil || !reflect.DeepEqual(f, Faults{FailTimes: 1}) {
		t.Errorf("no switches: %+v, %v", f, err)
	}
}

func TestLoadFaultsErrors(t *testing.T) {
	env := map[string]string{"FAULT_EFFECT_FAIL_TIMES": "x", "FAULT_HOOK_URL": "/relative", "FAULT_POISON": "maybe"}
	_, err := loadFaults(func(k string) string { return env[k] })
	var cerr *envconfig.Error
	if !errors.As(err, &cerr) || !slices.Equal(cerr.Vars(), []string{"FAULT_EFFECT_FAIL_TIMES", "FAULT_HOOK_URL", "FAULT_POISON"}) {
		t.Errorf("err = %v, want a problem with each variable", err)
	}
}

// TestNoSwitchNoWrapper: with no switch on, the effect is not wrapped.
func TestNoSwitchNoWrapper(t *testing.T) {
	effect := NewGiftCards(&fakeLedger{}, "ledger", "", http.DefaultClient)
	if got := (Faults{FailTimes: 1}).wrap(effect, http.DefaultClient, slog.Default()); got != Effect(effect) {
		t.Errorf("wrap = %T, want the effect itself", got)
	}
}

func TestPoison(t *testing.T) {
	for _, mode := range []string{"lease", "transactional"} {
		t.Run(mode, func(t *testing.T) {
			env := baseEnv()
			env["IDEM_MODE"] = mode
			env["FAULT_POISON"] = "true"
			h := newFaultHarness(t, env)
			for i := range 3 {
				failed, m := h.deliver(t, orderWithBody(fmt.Sprint("m", i), "o-poison", `{"orderId":"o-poison","poison":true}`))
				if len(failed) != 1 || m["Failed"] != 1 {
					t.Fatalf("delivery %d: failed %v, metrics %v; want Failed", i, failed, m)
				}
			}
			logs := h.logs.String()
			if !strings.Contains(logs, "consumer: injected fault: poison order fails every time") {
				t.Errorf("logs do not give the reason:\n%s", logs)
			}
			if strings.Contains(logs, "o-poison") {
				t.Errorf("logs name the order id:\n%s", logs)
			}
		})
	}
}

func TestEffectURLAndFaults(t *testing.T) {
	var mu sync.Mutex
	var hooks, posts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/hook":
			hooks = append(hooks, r.URL.Query().Get("point")+" "+r.URL.Query().Get("key"))
			w.WriteHeader(http.StatusTeapot) // ignored
		case "/effect":
			posts = append(posts, r.Header.Get("Idempotency-Key")+" attempt "+r.Header.Get("Fencing-Token"))
		}
	}))
	defer srv.Close()
	env := baseEnv()
	env["EFFECT_URL"] = srv.URL + "/effect"
	env["FAULT_HOOK_URL"] = srv.URL + "/hook"
	env["FAULT_EFFECT_FAIL_KEYS"] = "o-flaky, o-other"
	env["FAULT_EFFECT_FAIL_TIMES"] = "2"
	h := newFaultHarness(t, env)

	for i, want := range []string{"Failed", "Failed", "Executed", "Duplicate"} {
		failed, m := h.deliver(t, order(fmt.Sprint("m", i), "o-flaky"))
		if m[want] != 1 || (len(failed) == 1) != (want == "Failed") {
			t.Fatalf("delivery %d: failed %v, metrics %v; want %s", i, failed, m, want)
		}
	}
	if h.ledger.count("o-flaky") != 1 {
		t.Errorf("issued %d, want 1", h.ledger.count("o-flaky"))
	}
	wantHooks := []string{
		"before-effect o-flaky", "before-effect o-flaky",
		"before-effect o-flaky", "after-effect o-flaky",
	}
	if !slices.Equal(hooks, wantHooks) {
		t.Errorf("hooks = %v, want %v", hooks, wantHooks)
	}
	if !slices.Equal(posts, []string{"o-flaky attempt 3"}) {
		t.Errorf("posts = %v, want one with the key and attempt 3", posts)
	}
	if strings.Contains(h.logs.String(), "o-flaky") {
		t.Errorf("logs name the order id:\n%s", h.logs.String())
	}
}

// TestTransactionalFaults: in transactional mode the hooks wrap IssueTx and
// attempts are counted per process.
func TestTransactionalFaults(t *testing.T) {
	var mu sync.Mutex
	var hooks []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		hooks = append(hooks, r.URL.Query().Get("point")+" "+r.URL.Query().Get("key"))
	}))
	defer srv.Close()
	env := baseEnv()
	env["IDEM_MODE"] = "transactional"
	env["FAULT_HOOK_URL"] = srv.URL + "/hook"
	env["FAULT_EFFECT_FAIL_KEYS"] = "o-1"
	h := newFaultHarness(t, env)
	for i, want := range []string{"Failed", "Executed", "Duplicate"} {
		if failed, m := h.deliver(t, order(fmt.Sprint("m", i), "o-1")); m[want] != 1 || (len(failed) == 1) != (want == "Failed") {
			t.Fatalf("delivery %d: failed %v, metrics %v; want %s", i, failed, m, want)
		}
	}
	want := []string{"before-effect o-1", "before-effect o-1", "after-effect o-1"}
	if !slices.Equal(hooks, want) {
		t.Errorf("hooks = %v, want %v", hooks, want)
	}
	if n := len(h.store.Writes()); n != 1 {
		t.Errorf("%d writes committed, want 1", n)
	}
}

func TestHookUnreachable(t *testing.T) {
	env := baseEnv()
	env["FAULT_HOOK_URL"] = "http://127.0.0.1:1/hook" // nothing listens
	h := newFaultHarness(t, env)
	if failed, _ := h.deliver(t, order("m1", "o-unreachable")); len(failed) != 0 {
		t.Errorf("failed = %v: an unreachable hook must be ignored", failed)
	}
	logs := h.logs.String()
	if !strings.Contains(logs, "fault hook") {
		t.Errorf("the failed hook call is not logged:\n%s", logs)
	}
	if strings.Contains(logs, "o-unreachable") {
		t.Errorf("logs name the order id:\n%s", logs)
	}
}
