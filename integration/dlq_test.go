//go:build integration

package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/integration/internal/system"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// scenarioPoisonMalformedAndKeyless: messages that can never succeed end in the
// DLQ after maxReceiveCount with their reason, and leave no receipt: a
// poison key (its effect fails every time: FAULT_POISON_KEYS), a body no
// key can be read from, and a JSON body without the key. None needs
// anything of the effect.
func scenarioPoisonMalformedAndKeyless(t *testing.T) {
	const poisonKey = "poison-1"
	s := startSystem(t, system.Config{Consumers: 2, ConsumerEnv: map[string]string{consumer.EnvFaultPoisonKeys: poisonKey}})
	ctx := ctxFor(t, redeliveries(s, s.Queue.MaxReceiveCount)+time.Minute)
	good := messages(t, ctx, s, "healthy", 3)
	poison, err := s.Messages(ctx, poisonKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SendRaw(ctx, append(good, poison...)...); err != nil {
		t.Fatal(err)
	}
	malformed, err := s.SendBody(ctx, system.Malformed, "")
	if err != nil {
		t.Fatal(err)
	}
	keyless, err := s.SendBody(ctx, system.Keyless, "")
	if err != nil {
		t.Fatal(err)
	}
	drain(t, s, redeliveries(s, s.Queue.MaxReceiveCount))
	r := check(t, s, append(good, poison...), malformed, keyless)
	if r.Applied != 3 || len(r.DeadLetters) != 3 {
		t.Fatalf("applied %d, dead letters %d; want 3 and 3", r.Applied, len(r.DeadLetters))
	}
	for _, d := range r.DeadLetters {
		if d.Receives < s.Queue.MaxReceiveCount {
			t.Errorf("dead letter %s (key %q) after %d receives, want >= %d", d.MessageID, d.Key, d.Receives, s.Queue.MaxReceiveCount)
		}
	}
	rec, found, err := s.Receipt(ctx, poisonKey)
	if err != nil {
		t.Fatal(err)
	}
	if found && rec.Status != idem.StatusFailed {
		t.Errorf("the poison key left a %s record; only a FAILED one (with its last error) may stay", rec.Status)
	}
	if found {
		t.Logf("poison key: FAILED record, %d attempts, last error %q", rec.Attempts, rec.LastError)
	}
}

// scenarioSameKeyDifferentPayload: a key reused with other content is a
// mismatch: not applied twice, reported, and parked in the DLQ.
func scenarioSameKeyDifferentPayload(t *testing.T) {
	s := startSystem(t, system.Config{Consumers: 2})
	ctx := ctxFor(t, redeliveries(s, s.Queue.MaxReceiveCount)+time.Minute)
	first := messages(t, ctx, s, "reused", 1)
	if err := s.SendRaw(ctx, first...); err != nil {
		t.Fatal(err)
	}
	drain(t, s, 30*time.Second)
	second, err := s.Message(first[0].Key, 1)
	if err != nil {
		t.Fatal(err)
	}
	if string(second.Body) == string(first[0].Body) {
		t.Fatalf("the probe's variant 1 for %s is its variant 0: %s", second.Key, second.Body)
	}
	if err := s.SendRaw(ctx, second); err != nil {
		t.Fatal(err)
	}
	drain(t, s, redeliveries(s, s.Queue.MaxReceiveCount))
	r := check(t, s, first)
	if r.Applied != 1 || r.DoubleEffects != 0 || len(r.DeadLetters) != 1 || r.Outcomes["mismatch"] < 1 {
		t.Fatalf("applied %d, double %d, DLQ %d, outcomes %v; want 1, 0, 1, mismatches", r.Applied, r.DoubleEffects, len(r.DeadLetters), r.Outcomes)
	}
	if d := r.DeadLetters[0]; d.Body != string(second.Body) || !strings.Contains(d.Reason, "different payload") {
		t.Fatalf("dead letter %+v: want the second payload, reason payload mismatch", d)
	}
}
