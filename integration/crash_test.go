//go:build integration

package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
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
// expires too).
func scenarioCrashBeforeEffect(t *testing.T) {
	s := startSystem(t, system.Config{Consumers: 2})
	ctx := ctxFor(t, redeliveries(s, 1)+time.Minute)
	msgs := messages(t, ctx, s, "crash-before", 5)
	kills := killOnce(s, consumer.FaultBeforeEffect, msgs[2].Key)
	crashThenSend(t, ctx, s, kills, msgs[2], msgs)
	drain(t, s, redeliveries(s, 1))
	r := check(t, s, msgs)
	if kills.Load() != 1 || r.Applied != 5 || r.DoubleEffects != 0 {
		t.Fatalf("kills %d, applied %d, double effects %d; want 1, 5, 0", kills.Load(), r.Applied, r.DoubleEffects)
	}
	if rec := receipt(t, s, msgs[2].Key); s.Mode == consumer.ModeLease && rec.Attempts != 2 {
		t.Fatalf("receipt after the crash: %+v, want attempt 2 (the lease of the first was taken over)", rec)
	}
}

// scenarioCrashAfterEffect: the instance dies after the effect and before the
// receipt. Lease mode: the effect runs again once the lease expires — the
// documented window, counted here. Transactional mode: exactly once.
func scenarioCrashAfterEffect(t *testing.T) {
	for _, tc := range []struct {
		mode        string
		wantDoubles int
	}{
		{consumer.ModeLease, 1},
		{consumer.ModeTransactional, 0},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			s := startSystem(t, system.Config{Consumers: 2, Mode: tc.mode})
			ctx := ctxFor(t, redeliveries(s, 1)+time.Minute)
			msgs := messages(t, ctx, s, "crash-after-"+tc.mode, 5)
			kills := killOnce(s, consumer.FaultAfterEffect, msgs[1].Key)
			crashThenSend(t, ctx, s, kills, msgs[1], msgs)
			drain(t, s, redeliveries(s, 1))
			r := check(t, s, msgs)
			if kills.Load() != 1 || r.Applied != 5 || r.DoubleEffects != tc.wantDoubles {
				t.Fatalf("%s mode: kills %d, applied %d, double effects %d (%v); want 1, 5, %d",
					tc.mode, kills.Load(), r.Applied, r.DoubleEffects, r.Doubled, tc.wantDoubles)
			}
			if tc.wantDoubles > 0 && !slices.Equal(r.Doubled, []string{msgs[1].Key}) {
				t.Fatalf("doubled %v, want only the crashed key", r.Doubled)
			}
		})
	}
}

// scenarioTransientEffectError: the effect fails once; the message comes back
// and the retry applies it (in lease mode, the receipt counts both
// attempts).
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
	if r.Applied != 3 || r.DoubleEffects != 0 || r.Outcomes["failed"] != 1 {
		t.Fatalf("applied %d, double effects %d, outcomes %v; want 3, 0, one failure", r.Applied, r.DoubleEffects, r.Outcomes)
	}
	rec := receipt(t, s, keys[0])
	if rec.Status != idem.StatusCompleted || (s.Mode == consumer.ModeLease && rec.Attempts != 2) {
		t.Fatalf("receipt %+v: want COMPLETED (after 2 attempts in lease mode)", rec)
	}
}

// scenarioZombieStopsAtItsLease (lease mode): instance A, whose lease is
// short (1 s), stalls after its effect past its lease (a long GC pause, a
// frozen sandbox); B, a normal instance, takes the key over and completes.
// A, awake, cannot overwrite B's receipt: its receipt write is fenced by its
// lease token and refused (LeaseLost, its message comes back and is a
// duplicate), or, on a machine too slow for A to write before its
// deadline, it reports Unconfirmed (its message is done). B's receipt
// stays. Both effects ran: the lease-mode window, told and counted.
func scenarioZombieStopsAtItsLease(t *testing.T) {
	s := startSystem(t, system.Config{Consumers: 1, NoPoller: true, Mode: consumer.ModeLease})
	ctx := ctxFor(t, time.Minute)
	zombie := zombiePool(t, ctx, s)
	// Warm both instances up, so that A reaches the end of its effect well
	// within its lease. On a loaded machine a cold instance may miss its
	// 1 s lease: the warm-up is redelivered until it succeeds, as SQS would.
	warm := messages(t, ctx, s, "warm", 2)
	for i, pool := range []*lambdarun.Pool{zombie, s.Consumer} {
		p, _ := s.Event(fmt.Sprintf("msg-warm-%d", i), warm[i])
		for try := 1; ; try++ {
			out, err := pool.Invoke(ctx, p)
			if err == nil && !strings.Contains(string(out), "msg-warm") {
				break
			}
			if try == 5 {
				t.Fatalf("warm-up: %s, %v", out, err)
			}
		}
	}
	keys := messages(t, ctx, s, "zombie", 5) // one per try of A, below
	reached := make(chan struct{})
	var calls atomic.Int32
	zombie.SetFreeze(1500 * time.Millisecond) // A stalls past its 1 s lease, within its timeout
	zombie.SetFaultFunc(func(point, _ string) lambdarun.Action {
		if point == consumer.FaultAfterEffect && calls.Add(1) == 1 {
			close(reached)
			return lambdarun.Freeze
		}
		return lambdarun.Continue
	})
	var key []system.Message
	var payloadA, payloadB []byte
	var outA []byte
	var errA error
	var done chan struct{}
	// On a loaded machine A's effect may not end within its 1 s lease: it
	// fails before the end of its effect (its write may have landed). Then
	// A tries again with a fresh key, so that the checks below see one
	// key's history only.
	for try := 1; ; try++ {
		key = keys[try-1 : try]
		payloadA, _ = s.Event("msg-zombie-a", key[0])
		payloadB, _ = s.Event("msg-zombie-b", key[0])
		done = make(chan struct{})
		go func() {
			defer close(done)
			outA, errA = zombie.Invoke(ctx, payloadA)
		}()
		select {
		case <-reached:
		case <-done:
			if try == 5 {
				t.Fatalf("A never reached the end of its effect within its 1 s lease in 5 tries: %s, %v", outA, errA)
			}
			t.Logf("A ended before the end of its effect (try %d: %s, %v): again", try, outA, errA)
			continue
		case <-ctx.Done():
			t.Fatalf("waiting for A to reach the end of its effect: %v", ctx.Err())
		}
		break
	}
	time.Sleep(1100 * time.Millisecond) // A's lease has run out
	failedB, err := s.InvokeConsumer(ctx, payloadB)
	if err != nil || len(failedB) != 0 {
		t.Fatalf("B: failed %v, %v; want B to take over and complete", failedB, err)
	}
	await(t, ctx, done, "A's invocation to end")
	// The harness reads the Lambdas' logs through a pipe: give A's a moment.
	var lines []system.Line
	for wait := time.Now().Add(5 * time.Second); time.Now().Before(wait); time.Sleep(50 * time.Millisecond) {
		if lines = s.Records.Of("msg-zombie-a"); len(lines) > 0 {
			break
		}
	}
	if len(lines) == 0 {
		t.Fatal("A logged no outcome")
	}
	failedA := strings.Contains(string(outA), "msg-zombie-a")
	switch outcome := lines[len(lines)-1].Outcome; {
	case errA != nil:
		t.Fatalf("A: %v", errA)
	case outcome == "lease_lost" && failedA:
	case outcome == "unconfirmed" && !failedA:
	default:
		t.Fatalf("A: outcome %s, answered %s; want lease_lost (reported failed) or unconfirmed (done)", outcome, outA)
	}
	rec := receipt(t, s, key[0].Key)
	if rec.Status != idem.StatusCompleted || rec.Attempts != 2 {
		t.Fatalf("receipt %+v: want B's COMPLETED receipt on attempt 2", rec)
	}
	// A redelivery of A's message is now a plain duplicate.
	if failed, err := s.InvokeConsumer(ctx, payloadA); err != nil || len(failed) != 0 {
		t.Fatalf("redelivery of A's message: %v, %v", failed, err)
	}
	r := check(t, s, key)
	if r.DoubleEffects != 1 {
		t.Fatalf("double effects %d: want exactly the zombie's and the new owner's", r.DoubleEffects)
	}
	t.Logf("zombie: outcomes %v, effects %d", r.Outcomes, r.DoubleEffects+1)
}

// zombiePool starts one more consumer instance, with a short lease (1 s,
// margin 100 ms) and no cache, whose records the system's Records read.
// The system's own instance keeps the profile's lease (the time left), so
// the instance that takes over has its whole invocation for the effect,
// however slow the endpoint.
func zombiePool(t *testing.T, ctx context.Context, s *system.System) *lambdarun.Pool {
	t.Helper()
	fn := s.Consumer.Function()
	fn.Name += "-zombie"
	fn.Env[consumer.EnvLease], fn.Env[consumer.EnvSafetyMargin], fn.Env[consumer.EnvCacheSize] = "1s", "100ms", "0"
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
