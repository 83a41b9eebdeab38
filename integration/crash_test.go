//go:build integration

package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/integration/internal/lambdarun"
	"github.com/exactlyonce/sqsidem/integration/internal/system"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// killOnce SIGKILLs the consumer instance that reaches point for key, the
// first time only.
func killOnce(s *system.System, point, key string) *atomic.Int32 {
	var kills atomic.Int32
	s.Consumer.SetFaultFunc(func(p, k string) lambdarun.Action {
		if p == point && k == key && kills.CompareAndSwap(0, 1) {
			return lambdarun.Kill
		}
		return lambdarun.Continue
	})
	return &kills
}

// crashThenSend sends the message whose delivery is killed on its own,
// waits for the kill, then sends the others. A SIGKILL ends every record
// of the batch in flight, and records killed past their effect would be in
// the lease-mode window too (make demo shows that); here the scenario is
// one crash of one record.
func crashThenSend(t *testing.T, ctx context.Context, s *system.System, kills *atomic.Int32, crash system.Message, all []system.Message) {
	t.Helper()
	if err := s.SendRaw(ctx, crash); err != nil {
		t.Fatal(err)
	}
	for kills.Load() == 0 {
		if ctx.Err() != nil {
			t.Fatal("the crash point was never reached")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var rest []system.Message
	for _, m := range all {
		if m.Key != crash.Key {
			rest = append(rest, m)
		}
	}
	if err := s.SendRaw(ctx, rest...); err != nil {
		t.Fatal(err)
	}
}

// scenarioCrashBeforeEffect: the instance dies before the effect; the key is
// applied once after the message reappears (in lease mode once the lease
// expires too). What the attempt that takes the lapsed lease over does
// is the consumer's promise: with a Reconcile it asks (not applied) and
// runs the effect; at least once (retry, no reconcile) it runs it again
// (a rerun, counted, though the crash came first); at most once (hold, no
// reconcile) it holds the key, and the operator settles it (not done).
func scenarioCrashBeforeEffect(t *testing.T) {
	s := startSystem(t, system.Config{Consumers: 2})
	ctx := ctxFor(t, redeliveries(s, 1)+time.Minute)
	msgs := messages(t, ctx, s, "crash-before", 5)
	crashed := msgs[2].Key
	kills := killOnce(s, consumer.FaultBeforeEffect, crashed)
	crashThenSend(t, ctx, s, kills, msgs[2], msgs)
	drain(t, s, redeliveries(s, 1))
	r := check(t, s, msgs)
	if kills.Load() != 1 {
		t.Fatalf("kills %d, want 1", kills.Load())
	}
	switch {
	case s.Promise.Is(consumer.GuaranteeAtMostOnce):
		wantHeld(t, s, r, crashed, "the lease a crash before the effect left")
		if n := r.Times[crashed]; n != 0 {
			t.Fatalf("%s: key %s applied %d times although its instance died before the effect", s.Promise, crashed, n)
		}
	case s.Promise.Is(consumer.GuaranteeAtLeastOnce) && r.Reruns[crashed] == 0:
		t.Fatalf("%s: outcomes %v; want the crashed key's lease taken over and its effect run again (rerun)", s.Promise, r.Outcomes)
	}
	r = settleLeft(t, s, r, msgs)
	if r.Applied != 5 {
		t.Fatalf("%s: applied %d of 5 keys", s.Promise, r.Applied)
	}
	if rec := receipt(t, s, crashed); s.Mode == consumer.ModeLease && rec.Attempts < 2 {
		t.Fatalf("receipt after the crash: %+v, want attempt 2 or later (the lease of the first was taken over)", rec)
	}
}

// scenarioCrashAfterEffect: the instance dies after the effect and before the
// receipt. Transactional mode: exactly once, one transaction. Lease mode:
// once the lease expires, the attempt that takes the key over finds an
// unknown outcome, and what it does is the consumer's promise:
//
//   - exactly once (a Reconcile: the template's asks the partner): the
//     effect took place, so the receipt is written and nothing runs again
//     (outcome reconciled) — the window closed;
//   - at most once (hold, no reconcile): the key is HELD, its message in
//     the DLQ; the operator finds the effect took place (resolve --done)
//     and redrives: applied once;
//   - at least once (retry, no reconcile): the effect runs again (a rerun,
//     counted): applied twice, the documented window.
func scenarioCrashAfterEffect(t *testing.T) {
	for _, mode := range []string{consumer.ModeLease, consumer.ModeTransactional} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			s := startSystem(t, system.Config{Consumers: 2, Mode: mode})
			ctx := ctxFor(t, redeliveries(s, 1)+time.Minute)
			msgs := messages(t, ctx, s, "crash-after-"+mode, 5)
			crashed := msgs[1].Key
			kills := killOnce(s, consumer.FaultAfterEffect, crashed)
			crashThenSend(t, ctx, s, kills, msgs[1], msgs)
			drain(t, s, redeliveries(s, 1))
			r := check(t, s, msgs)
			if kills.Load() != 1 || r.Applied != 5 {
				t.Fatalf("%s: kills %d, applied %d of 5 keys; want 1, 5", s.Promise, kills.Load(), r.Applied)
			}
			switch n := r.Times[crashed]; {
			case s.Promise.Is(consumer.GuaranteeAtLeastOnce) && n != 2:
				t.Fatalf("%s: the crashed key applied %d times, want 2 (its effect run again after the crash: the window)", s.Promise, n)
			case !s.Promise.Is(consumer.GuaranteeAtLeastOnce) && n != 1:
				t.Fatalf("%s: the crashed key applied %d times, want 1", s.Promise, n)
			case s.Promise.Is(consumer.GuaranteeAtMostOnce):
				wantHeld(t, s, r, crashed, "a crash after the effect")
			case s.Mode == consumer.ModeLease && s.Promise.Reconcile && r.Outcomes["reconciled"] != 1:
				t.Fatalf("%s: outcomes %v; want the crashed key reconciled once", s.Promise, r.Outcomes)
			}
			settleLeft(t, s, r, msgs)
		})
	}
}

// scenarioTransientEffectError: the effect fails once (an error not marked
// definite: its outcome is unknown); the message comes back and the
// retry applies it (in lease mode, the receipt counts both attempts). At
// most once (hold, no reconcile), that retry holds the key instead, and
// the operator settles it (not done) and redrives it.
func scenarioTransientEffectError(t *testing.T) {
	keys := system.Keys("transient", 3)
	s := startSystem(t, system.Config{Consumers: 2, ConsumerEnv: map[string]string{
		consumer.EnvFaultFailKeys:  keys[0],
		consumer.EnvFaultFailTimes: "1",
	}})
	ctx := ctxFor(t, redeliveries(s, 1)+time.Minute)
	msgs, err := s.Messages(ctx, keys...)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SendRaw(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	drain(t, s, redeliveries(s, 1))
	r := check(t, s, msgs)
	if !slices.ContainsFunc(s.Records.OfKey(s.StorageKey(keys[0])), func(l system.Line) bool { return l.Outcome == "failed" }) {
		t.Fatalf("%s: outcomes %v; want the failing key's failure", s.Promise, r.Outcomes)
	}
	switch {
	case s.Promise.Is(consumer.GuaranteeAtMostOnce):
		wantHeld(t, s, r, keys[0], "an effect error not marked definite")
	case s.Promise.Is(consumer.GuaranteeAtLeastOnce) && r.Reruns[keys[0]] == 0:
		t.Fatalf("%s: outcomes %v; want the failed key's unknown outcome run again (rerun)", s.Promise, r.Outcomes)
	}
	r = settleLeft(t, s, r, msgs)
	if r.Applied != 3 {
		t.Fatalf("%s: applied %d of 3 keys", s.Promise, r.Applied)
	}
	rec := receipt(t, s, keys[0])
	if rec.Status != idem.StatusCompleted || (s.Mode == consumer.ModeLease && rec.Attempts < 2) {
		t.Fatalf("receipt %+v: want COMPLETED (after 2 attempts or more in lease mode)", rec)
	}
}

// scenarioZombieStopsAtItsLease (lease mode): instance A, whose lease is
// short (3 s), has done its effect when it stalls (a long GC pause, a
// frozen sandbox) past its lease; B, a normal instance, takes the key over.
// A, awake, cannot overwrite what B wrote: its receipt write is fenced by
// its lease token and refused (LeaseLost, its message comes back and is a
// duplicate), or, when the store does not answer it, it reports
// Unconfirmed (its message is done). B took over an unknown outcome (A's
// lapsed lease), and what B does is the consumer's promise:
//
//   - exactly once (a Reconcile): B asks first, finds A's effect, writes
//     the receipt and runs nothing (reconciled): one effect;
//   - at least once (retry, no reconcile): B runs the effect again (a
//     rerun, counted): two effects, the documented window;
//   - at most once (hold, no reconcile): B holds the key; the operator
//     finds A's effect (resolve --done): one effect.
//
// No step waits for a duration that happens to suffice. The guarantee
// checked: a zombie's receipt write cannot replace its successor's. The
// events waited for: A at the end of its effect, frozen there
// (lambdarun.Freeze) until B has completed (or held) the key
// (SetFreezeUntil); B, delivered again as SQS would, can take the key
// over only once A's lease has ended, so A overruns its lease by
// construction, however slow the machine. A try of A whose effect does
// not end within its lease (a loaded machine: it fails, and its effect
// may have landed) is made again on a fresh key, so that the checks see
// one key's history only.
func scenarioZombieStopsAtItsLease(t *testing.T) {
	s := startSystem(t, system.Config{Consumers: 1, NoPoller: true, Mode: consumer.ModeLease})
	ctx := ctxFor(t, 3*time.Minute)
	zombie := zombiePool(t, ctx, s, 3*time.Minute)
	// Warm both instances up, so that A's tries do not spend their lease on
	// a cold start. Event: each warm-up message done (a try that fails, its
	// lease held, is delivered again until its lease has ended), or, at
	// most once, held (a try that outlived the zombie's short lease left
	// an unknown outcome: warm all the same).
	warm := messages(t, ctx, s, "warm", 2)
	for i, pool := range []*lambdarun.Pool{zombie, s.Consumer} {
		id := fmt.Sprintf("msg-warm-%d", i)
		p, _ := s.Event(id, warm[i])
		if s.Promise.Is(consumer.GuaranteeAtMostOnce) {
			deliverUntil(t, ctx, s, pool, p, id, fmt.Sprintf("the warm-up of %s", pool.Name()), "executed", "duplicate", "held")
			continue
		}
		deliverUntilDone(t, ctx, pool, p, fmt.Sprintf("the warm-up of %s", pool.Name()))
	}
	release := make(chan struct{})
	var releaseOnce sync.Once
	releaseA := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(releaseA) // a failed test leaves no process stopped
	zombie.SetFreezeUntil(release)

	var (
		key                []system.Message
		idA, idB           string
		payloadA, payloadB []byte
		outA               []byte
		errA               error
		done               chan struct{}
	)
	for try := 1; ; try++ {
		key = messages(t, ctx, s, fmt.Sprintf("zombie-%d", try), 1)
		idA, idB = fmt.Sprintf("msg-zombie-a-%d", try), fmt.Sprintf("msg-zombie-b-%d", try)
		payloadA, _ = s.Event(idA, key[0])
		payloadB, _ = s.Event(idB, key[0])
		reached := make(chan struct{})
		var frozen atomic.Bool
		zombie.SetFaultFunc(func(point, k string) lambdarun.Action {
			if point == consumer.FaultAfterEffect && k == key[0].Key && frozen.CompareAndSwap(false, true) {
				close(reached)
				return lambdarun.Freeze
			}
			return lambdarun.Continue
		})
		done = make(chan struct{})
		go func() {
			defer close(done)
			outA, errA = zombie.Invoke(ctx, payloadA)
		}()
		select {
		case <-reached:
		case <-done:
			t.Logf("try %d: A ended without stopping at the end of its effect (its effect or the fault hook outlasted its lease): %s, %v; again, on a fresh key", try, outA, errA)
			continue
		case <-ctx.Done():
			t.Fatalf("waiting for A to reach the end of its effect within its lease (try %d): %v", try, ctx.Err())
		}
		break
	}
	holds := s.Promise.Is(consumer.GuaranteeAtMostOnce)
	var deliveries int
	if holds {
		deliveries = deliverUntilHeld(t, ctx, s, payloadB, idB, "B to take the key over from A and hold it")
	} else {
		deliveries = deliverUntilDone(t, ctx, s.Consumer, payloadB, "B to take the key over from A and complete it")
	}
	releaseA()
	await(t, ctx, done, "A's invocation to end")
	failedA := strings.Contains(string(outA), idA)
	switch outcome := loggedOutcome(t, ctx, s, idA, 0); {
	case errA != nil:
		t.Fatalf("A: %v", errA)
	case outcome == "lease_lost" && failedA:
	case outcome == "unconfirmed" && !failedA:
	default:
		t.Fatalf("A: outcome %s, answered %s; want lease_lost (reported failed) or unconfirmed (done)", outcome, outA)
	}
	// A was attempt 1; a record of a later attempt is B's (2, or more when
	// a delivery of B that had taken the key over failed, on a loaded
	// machine, and the next took it over again).
	rec := receipt(t, s, key[0].Key)
	want := idem.StatusCompleted
	if holds {
		want = idem.StatusHeld
	}
	if rec.Status != want || rec.Attempts < 2 {
		t.Fatalf("%s: record %+v: want B's %s record, of attempt 2 or later", s.Promise, rec, want)
	}
	if holds {
		// The operator: the partner has A's effect.
		applied, err := s.Applied(ctx, system.KeysOf(key))
		if err != nil || applied[key[0].Key] != 1 {
			t.Fatalf("%s: the held key applied %v, %v; want A's effect, once", s.Promise, applied, err)
		}
		newSystemCLI(ctx, t, s).run(ctx, t, "resolve", key[0].Key, "--done", "--yes")
	}
	// A redelivery of A's message is now a plain duplicate.
	logged := len(s.Records.Of(idA))
	deliverUntilDone(t, ctx, s.Consumer, payloadA, "the redelivery of A's message")
	if outcome := loggedOutcome(t, ctx, s, idA, logged); outcome != "duplicate" {
		t.Fatalf("the redelivery of A's message: outcome %s, want duplicate", outcome)
	}
	r := check(t, s, key)
	switch n := r.Times[key[0].Key]; {
	case s.Promise.Is(consumer.GuaranteeAtLeastOnce) && (n != 2 || r.Reruns[key[0].Key] == 0):
		t.Fatalf("%s: applied %d times, outcomes %v; want 2, B's a rerun of A's unknown outcome", s.Promise, n, r.Outcomes)
	case !s.Promise.Is(consumer.GuaranteeAtLeastOnce) && n != 1:
		t.Fatalf("%s: applied %d times, outcomes %v; want A's effect only", s.Promise, n, r.Outcomes)
	case s.Promise.Reconcile && r.Outcomes["reconciled"] < 1:
		t.Fatalf("%s: outcomes %v: want B reconciled with A's effect", s.Promise, r.Outcomes)
	}
	t.Logf("zombie: %s: outcomes %v, effects %d, B delivered %d times until A's lease ended", s.Promise, r.Outcomes, r.Times[key[0].Key], deliveries)
}

// deliverUntilHeld invokes the system's consumer with payload, the SQS
// event of message id, again and again, as SQS delivers a failed message
// again, until the consumers log the outcome held for it, and returns how
// many deliveries it took.
func deliverUntilHeld(t *testing.T, ctx context.Context, s *system.System, payload []byte, id, what string) int {
	t.Helper()
	return deliverUntil(t, ctx, s, s.Consumer, payload, id, what, "held")
}

// deliverUntil invokes pool with payload, the SQS event of message id,
// again and again, until the consumers log one of outcomes for it, and
// returns how many deliveries it took.
func deliverUntil(t *testing.T, ctx context.Context, s *system.System, pool *lambdarun.Pool, payload []byte, id, what string, outcomes ...string) int {
	t.Helper()
	for n := 1; ; n++ {
		before := len(s.Records.Of(id))
		out, err := pool.Invoke(ctx, payload)
		if err == nil && slices.Contains(outcomes, loggedOutcome(t, ctx, s, id, before)) {
			return n
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %d deliveries, the last answered %s, %v: %v", what, n, out, err, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// loggedOutcome waits for the consumers to have logged more than before
// outcomes for message id, and returns the last one. The harness reads the
// Lambdas' logs through a pipe: a line may follow the invocation's answer.
func loggedOutcome(t *testing.T, ctx context.Context, s *system.System, id string, before int) string {
	t.Helper()
	for {
		if lines := s.Records.Of(id); len(lines) > before {
			return lines[len(lines)-1].Outcome
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for the logged outcome of message %s: %v", id, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// zombiePool starts one more consumer instance, with a short lease (3 s,
// margin 100 ms), no cache, and an invocation timeout of timeout, whose
// records the system's Records read. The timeout outlasts the scenario, so
// that A, frozen until B has completed, is not killed for it (a zombie's
// invocation lives on). The system's own instance keeps the profile's
// lease (the time left), so the instance that takes over has its whole
// invocation for the effect, however slow the endpoint.
func zombiePool(t *testing.T, ctx context.Context, s *system.System, timeout time.Duration) *lambdarun.Pool {
	t.Helper()
	fn := s.Consumer.Function()
	fn.Name += "-zombie"
	fn.Timeout = timeout
	fn.Env[consumer.EnvLease], fn.Env[consumer.EnvSafetyMargin], fn.Env[consumer.EnvCacheSize] = "3s", "100ms", "0"
	pool, err := lambdarun.Start(ctx, fn, 1, lambdarun.WithLog(s.Records))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Stop)
	return pool
}

func receipt(t *testing.T, s *system.System, key string) idem.Record {
	t.Helper()
	rec, found, err := s.Receipt(context.Background(), key)
	if err != nil || !found {
		t.Fatalf("receipt of %s: found %v, %v", key, found, err)
	}
	return rec
}
