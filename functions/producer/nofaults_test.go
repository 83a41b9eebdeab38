//go:build !sqsidem_faults

package main

import (
	"testing"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

// TestWithoutFaultsTag: a build without the tag sqsidem_faults (what is
// deployed) neither reads nor honours a FAULT_* variable: it sends.
func TestWithoutFaultsTag(t *testing.T) {
	env := map[string]string{
		contract.EnvFaultFailSend: "true", contract.EnvFaultFailSendKeys: "a", contract.EnvFaultFailPostSendUpdate: "maybe",
	}
	f, err := loadFaults(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	client := &fakeSQS{}
	store, sqs := f.wrap(idemtest.NewMemoryStore(), client)
	if out := run(t, newProducer(t, store, sqs, env), messages("a", "b")); out.Sent != 2 {
		t.Errorf("out = %+v, want 2 sent", out)
	}
	if _, received := client.stats(); received["a"] != 1 || received["b"] != 1 {
		t.Errorf("received %v, want each once", received)
	}
}
