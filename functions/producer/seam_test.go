package main

import (
	"testing"

	"github.com/exactlyonce/sqsidem/functions/internal/seamtest"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

// TestFaultsDeletable: the fault switches are a wrapper a fork deletes with
// faults.go, faults_test.go and the FAULTS line of main.go; producer.go and
// the rest know nothing of them.
func TestFaultsDeletable(t *testing.T) {
	seamtest.Deletable(t, ".")
}

// TestWithoutFaultWrapper: built without the wrapper, the producer ignores
// every FAULT_* variable and sends: no switch lives elsewhere.
func TestWithoutFaultWrapper(t *testing.T) {
	client := &fakeSQS{}
	p := newProducer(t, idemtest.NewMemoryStore(), client, map[string]string{
		"FAULT_FAIL_SEND": "true", "FAULT_FAIL_SEND_KEYS": "a", "FAULT_FAIL_POST_SEND_UPDATE": "true",
	})
	if out := run(t, p, orders("a", "b")); out.Sent != 2 {
		t.Errorf("out = %+v, want 2 sent", out)
	}
	if _, received := client.stats(); received["a"] != 1 || received["b"] != 1 {
		t.Errorf("received %v, want each once", received)
	}
}
