//go:build sqsidem_faults

package main

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
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
	env := map[string]string{contract.EnvFaultFailSendKeys: "a,b", contract.EnvFaultFailPostSendUpdate: "1"}
	f, err := loadFaults(func(k string) string { return env[k] })
	want := faults{failSendKeys: []string{"a", "b"}, failPostSendUpdate: true}
	if err != nil || !reflect.DeepEqual(f, want) {
		t.Errorf("faults = %+v, %v\nwant %+v", f, err, want)
	}
	env = map[string]string{contract.EnvFaultFailSend: "sometimes", contract.EnvFaultFailPostSendUpdate: "x"}
	_, err = loadFaults(func(k string) string { return env[k] })
	var cerr *consumer.ConfigError
	if !errors.As(err, &cerr) || !slices.Equal(cerr.Vars(), []string{contract.EnvFaultFailPostSendUpdate, contract.EnvFaultFailSend}) {
		t.Errorf("err = %v, want a problem with each variable", err)
	}
}

// TestNoSwitchNoWrapper: with no switch on, the clients are not wrapped.
func TestNoSwitchNoWrapper(t *testing.T) {
	store, client := idemtest.NewMemoryStore(), &fakeSQS{}
	if s, c := (faults{}).wrap(store, client); s != idem.Store(store) || c != SQS(client) {
		t.Errorf("wrap = %T, %T; want the clients themselves", s, c)
	}
}

func TestFaultSwitches(t *testing.T) {
	t.Run("fail send", func(t *testing.T) {
		store, client := idemtest.NewMemoryStore(), &fakeSQS{}
		out := run(t, newFaultProducer(t, store, client, map[string]string{contract.EnvFaultFailSend: "true"}), messages("a", "b"))
		if out.Failed != 2 || !strings.Contains(out.Failures[0].Reason, ErrInjected.Error()) {
			t.Errorf("out = %+v, want 2 injected failures", out)
		}
		if calls, _ := client.stats(); len(calls) != 0 {
			t.Errorf("the real client was called %d times", len(calls))
		}
		// Released: a run without the fault sends both.
		if out := run(t, newProducer(t, store, client, nil), messages("a", "b")); out.Sent != 2 {
			t.Errorf("after the fault: %+v, want 2 sent", out)
		}
	})
	t.Run("fail send keys", func(t *testing.T) {
		client := &fakeSQS{}
		out := run(t, newFaultProducer(t, idemtest.NewMemoryStore(), client, map[string]string{contract.EnvFaultFailSendKeys: "b, c"}),
			messages("a", "b", "c", "d"))
		if out.Sent != 2 || out.Failed != 2 {
			t.Errorf("out = %+v, want a and d sent, b and c failed", out)
		}
		if _, received := client.stats(); received["b"]+received["c"] != 0 || received["a"] != 1 {
			t.Errorf("received %v", received)
		}
	})
	t.Run("fail post-send update", func(t *testing.T) {
		store, client := idemtest.NewMemoryStore(), &fakeSQS{}
		env := map[string]string{
			contract.EnvFaultFailPostSendUpdate: "true", consumer.EnvLease: "300ms", consumer.EnvSafetyMargin: "50ms",
		}
		p := newFaultProducer(t, store, client, env)
		out := run(t, p, messages("a", "b"))
		if out.Failed != 2 || !strings.Contains(out.Failures[0].Reason, "receipt was not written") {
			t.Errorf("out = %+v, want 2 sent-but-not-recorded failures", out)
		}
		// No re-send storm: another run while the lease lives sends
		// nothing; this process owes the receipts and never sends again.
		other := newFaultProducer(t, store, client, env)
		if out := run(t, other, messages("a", "b")); out.InProgress != 2 {
			t.Errorf("another process's re-run = %+v, want 2 in progress", out)
		}
		time.Sleep(350 * time.Millisecond)
		if out := run(t, p, messages("a", "b")); out.Sent != 0 || out.Failed != 2 {
			t.Errorf("this process's re-run after the lease = %+v, want the receipts still owed, nothing sent", out)
		}
		if _, received := client.stats(); received["a"] != 1 || received["b"] != 1 {
			t.Errorf("received %v, want each once", received)
		}
		// After the lease another process sends again (it cannot know the
		// first send happened); the consumer dedups by key.
		run(t, other, messages("a", "b"))
		if _, received := client.stats(); received["a"] != 2 {
			t.Errorf("received %v, want a re-send by another process after the lease expired", received)
		}
	})
}
