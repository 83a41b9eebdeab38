package main

// Tests of faults.go; a fork deletes this file with it.

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/functions/internal/envconfig"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

// newFaultProducer builds the producer as main does, fault wrapper
// included.
func newFaultProducer(t *testing.T, store idem.Store, client SQS, env map[string]string) *Producer {
	t.Helper()
	f, err := loadFaults(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	store, client = f.wrap(store, client)
	return newProducer(t, store, client, env)
}

func TestLoadFaults(t *testing.T) {
	env := map[string]string{"FAULT_FAIL_SEND_KEYS": "a,b", "FAULT_FAIL_POST_SEND_UPDATE": "1"}
	f, err := loadFaults(func(k string) string { return env[k] })
	want := Faults{FailSendKeys: []string{"a", "b"}, FailPostSendUpdate: true}
	if err != nil || !reflect.DeepEqual(f, want) {
		t.Errorf("faults = %+v, %v\nwant %+v", f, err, want)
	}
	env = map[string]string{"FAULT_FAIL_SEND": "sometimes", "FAULT_FAIL_POST_SEND_UPDATE": "x"}
	_, err = loadFaults(func(k string) string { return env[k] })
	var cerr *envconfig.Error
	if !errors.As(err, &cerr) || !slices.Equal(cerr.Vars(), []string{"FAULT_FAIL_POST_SEND_UPDATE", "FAULT_FAIL_SEND"}) {
		t.Errorf("err = %v, want a problem with each variable", err)
	}
}

// TestNoSwitchNoWrapper: with no switch on, the clients are not wrapped.
func TestNoSwitchNoWrapper(t *testing.T) {
	store, client := idemtest.NewMemoryStore(), &fakeSQS{}
	if s, c := (Faults{}).wrap(store, client); s != idem.Store(store) || c != SQS(client) {
		t.Errorf("wrap = %T, %T; want the clients themselves", s, c)
	}
}

func TestFaultSwitches(t *testing.T) {
	t.Run("FAULT_FAIL_SEND", func(t *testing.T) {
		store, client := idemtest.NewMemoryStore(), &fakeSQS{}
		out := run(t, newFaultProducer(t, store, client, map[string]string{"FAULT_FAIL_SEND": "true"}), orders("a", "b"))
		if out.Failed != 2 || !strings.Contains(out.Failures[0].Reason, ErrInjected.Error()) {
			t.Errorf("out = %+v, want 2 injected failures", out)
		}
		if calls, _ := client.stats(); len(calls) != 0 {
			t.Errorf("the real client was called %d times", len(calls))
		}
		// Released: a run without the fault sends both.
		if out := run(t, newProducer(t, store, client, nil), orders("a", "b")); out.Sent != 2 {
			t.Errorf("after the fault: %+v, want 2 sent", out)
		}
	})
	t.Run("FAULT_FAIL_SEND_KEYS", func(t *testing.T) {
		client := &fakeSQS{}
		out := run(t, newFaultProducer(t, idemtest.NewMemoryStore(), client, map[string]string{"FAULT_FAIL_SEND_KEYS": "b, c"}),
			orders("a", "b", "c", "d"))
		if out.Sent != 2 || out.Failed != 2 {
			t.Errorf("out = %+v, want a and d sent, b and c failed", out)
		}
		if _, received := client.stats(); received["b"]+received["c"] != 0 || received["a"] != 1 {
			t.Errorf("received %v", received)
		}
	})
	t.Run("FAULT_FAIL_POST_SEND_UPDATE", func(t *testing.T) {
		store, client := idemtest.NewMemoryStore(), &fakeSQS{}
		env := map[string]string{
			"FAULT_FAIL_POST_SEND_UPDATE": "true", "IDEM_LEASE": "300ms", "IDEM_SAFETY_MARGIN": "50ms",
		}
		p := newFaultProducer(t, store, client, env)
		out := run(t, p, orders("a", "b"))
		if out.Failed != 2 || !strings.Contains(out.Failures[0].Reason, "receipt was not written") {
			t.Errorf("out = %+v, want 2 sent-but-not-recorded failures", out)
		}
		// No re-send storm: while the lease lives, a re-run sends nothing.
		if out := run(t, p, orders("a", "b")); out.InProgress != 2 {
			t.Errorf("re-run = %+v, want 2 in progress", out)
		}
		if _, received := client.stats(); received["a"] != 1 || received["b"] != 1 {
			t.Errorf("received %v, want each once", received)
		}
		// After the lease a re-run sends again; the consumer dedups by order id.
		time.Sleep(350 * time.Millisecond)
		run(t, p, orders("a", "b"))
		if _, received := client.stats(); received["a"] != 2 {
			t.Errorf("received %v, want a re-send after the lease expired", received)
		}
	})
}
