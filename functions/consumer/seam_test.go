package main

import (
	"os"
	"regexp"
	"testing"

	"github.com/exactlyonce/sqsidem/functions/internal/seamtest"
)

// TestFaultsDeletable: the fault switches are a wrapper a fork deletes with
// faults.go, faults_test.go and the FAULTS line of main.go; effect.go and
// the rest know nothing of them.
func TestFaultsDeletable(t *testing.T) {
	seamtest.Deletable(t, ".")
	src, err := os.ReadFile("effect.go")
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?i)\bfault`).Find(src); m != nil {
		t.Errorf("effect.go mentions %q: it holds the business effect only", m)
	}
}

// TestWithoutFaultWrapper: built without the wrapper, the consumer ignores
// every FAULT_* variable and runs the effect: no switch lives elsewhere.
func TestWithoutFaultWrapper(t *testing.T) {
	env := baseEnv()
	env["FAULT_POISON"] = "true"
	env["FAULT_EFFECT_FAIL_KEYS"] = "o-1"
	env["FAULT_HOOK_URL"] = "http://127.0.0.1:1/hook"
	for _, mode := range []string{"lease", "transactional"} {
		t.Run(mode, func(t *testing.T) {
			env["IDEM_MODE"] = mode
			h := newHarness(t, env)
			failed, m := h.deliver(t, orderWithBody("m1", "o-1", `{"orderId":"o-1","poison":true}`))
			if len(failed) != 0 || m["Executed"] != 1 {
				t.Errorf("failed %v, metrics %v; want the effect executed", failed, m)
			}
			if issued := h.ledger.count("o-1") + len(h.store.Writes()); issued != 1 {
				t.Errorf("effect applied %d times, want 1", issued)
			}
		})
	}
}
