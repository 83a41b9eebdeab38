//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/integration/internal/esm"
	"github.com/exactlyonce/sqsidem/integration/internal/lambdarun"
	"github.com/exactlyonce/sqsidem/integration/internal/provision"
	"github.com/exactlyonce/sqsidem/integration/internal/system"
	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// Every scenario checks the invariant: each order sent is applied exactly
// once in the ledger, or sits in the DLQ with a reason; nothing vanishes.
// They run in parallel, each on its own provisioned copy of the stack, since
// most of their time is spent waiting for visibility timeouts.

// redeliveries is how long a test waits for the messages of s to be
// received n more times: n visibility timeouts of the template's queue, with
// room for a loaded machine. The LocalStack profile's longer timeouts
// lengthen every wait with them.
func redeliveries(s *system.System, n int) time.Duration {
	return time.Duration(n+2)*s.Queue.VisibilityTimeout*3/2 + 30*time.Second
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestThousandOrdersWithDuplicates: 1,000 orders published by the producer
// in chunks, 30% duplicates (300 re-triggered producer sends plus 300 raw
// duplicate messages), 4 consumer instances.
func TestThousandOrdersWithDuplicates(t *testing.T) {
	t.Parallel()
	s := startSystem(t, system.Config{Consumers: 4})
	ctx := ctxFor(t, 5*time.Minute)
	orders := system.Orders("bulk", 1000)
	start := time.Now()

	// Two producer instances publish the orders in chunks of 25. A run that
	// fails or times out, or leaves orders unsent or in progress (a timed-out
	// run's lease), is run again for its chunk, as a scheduler would, until
	// every order of the chunk is sent or known as sent: the producer's guard
	// keeps the re-runs from sending an order twice.
	chunks := slices.Collect(slices.Chunk(orders, 25))
	var sent, reruns atomic.Int64
	var wg sync.WaitGroup
	work := make(chan []system.Order)
	for range 2 {
		wg.Go(func() {
			for chunk := range work {
				n, runs, err := produceAll(ctx, s, chunk)
				if err != nil {
					t.Error(err)
				}
				sent.Add(int64(n))
				reruns.Add(int64(runs - 1))
			}
		})
	}
	for _, chunk := range chunks {
		work <- chunk
	}
	close(work)
	wg.Wait()
	// The scheduler re-triggers the first 300 orders: all sent already, so
	// the producer's guard sends none of them again.
	for j, chunk := range chunks[:12] {
		res, err := s.Produce(ctx, chunk)
		if err != nil || res.Sent != 0 || res.Duplicates != len(chunk) {
			t.Errorf("re-triggered producer, chunk %d: %+v, %v; want %d duplicates, nothing sent", j, res, err, len(chunk))
		}
	}
	// Another upstream sends 300 raw duplicates the producer never saw.
	var dups []system.Order
	for i := 0; i < len(orders); i += 10 {
		dups = append(dups, orders[i], orders[i+3], orders[i+7])
	}
	if err := s.SendRaw(ctx, dups...); err != nil {
		t.Fatal(err)
	}
	drain(t, s, 4*time.Minute)
	elapsed := time.Since(start)

	r := check(t, s, orders)
	t.Logf("producer: %d orders sent, %d runs re-run after a failure or timeout", sent.Load(), reruns.Load())
	t.Logf("throughput: %d deliveries in %.1fs from the first send to an empty queue: %.0f msgs/s (2 cores, emulators included)",
		r.Deliveries, elapsed.Seconds(), float64(r.Deliveries)/elapsed.Seconds())
	if r.Applied != 1000 || r.DoubleEffects != 0 || len(r.DeadLetters) != 0 {
		t.Fatalf("applied %d, double effects %d, DLQ %d; want 1000, 0, 0", r.Applied, r.DoubleEffects, len(r.DeadLetters))
	}
	if r.Outcomes["executed"] != 1000 || r.Outcomes["duplicate"]+r.Outcomes["in_progress"] < 300 {
		t.Fatalf("outcomes %v: want 1000 executed and the 300 duplicates suppressed", r.Outcomes)
	}
}

// TestOneOrderToEightInstances delivers the same message to 8 consumer
// instances at the same moment.
func TestOneOrderToEightInstances(t *testing.T) {
	t.Parallel()
	s := startSystem(t, system.Config{Consumers: 8, NoPoller: true})
	ctx := ctxFor(t, time.Minute)
	order := system.Orders("same", 1)
	payload, err := s.Event("msg-same-0", order[0])
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var ok, retry atomic.Int32
	start := make(chan struct{})
	for range 8 {
		wg.Go(func() {
			<-start
			failed, err := s.InvokeConsumer(ctx, payload)
			switch {
			case err != nil:
				t.Errorf("invoke: %v", err)
			case len(failed) == 0:
				ok.Add(1)
			default:
				retry.Add(1) // in progress: comes back after the visibility timeout
			}
		})
	}
	close(start)
	wg.Wait()
	r := check(t, s, order)
	if r.Applied != 1 || r.DoubleEffects != 0 || r.Outcomes["executed"] != 1 {
		t.Fatalf("8 concurrent deliveries: %+v", r)
	}
	t.Logf("8 concurrent deliveries: %d succeeded (1 executed, %d duplicates), %d told to retry (in progress)", ok.Load(), r.Outcomes["duplicate"], retry.Load())
}

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

// crashThenSend sends the order whose delivery is killed on its own, waits
// for the kill, then sends the others. A SIGKILL ends every record of the
// batch in flight, and records killed past their effect would be in the
// lease-mode window too (make demo shows that); here the scenario is one
// crash of one record.
func crashThenSend(t *testing.T, ctx context.Context, s *system.System, kills *atomic.Int32, crash system.Order, all []system.Order) {
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
	var rest []system.Order
	for _, o := range all {
		if o.OrderID != crash.OrderID {
			rest = append(rest, o)
		}
	}
	if err := s.SendRaw(ctx, rest...); err != nil {
		t.Fatal(err)
	}
}

// TestCrashBeforeEffect: the instance dies before the effect; the order is
// applied once after the lease expires and the message reappears.
func TestCrashBeforeEffect(t *testing.T) {
	t.Parallel()
	s := startSystem(t, system.Config{Consumers: 2})
	ctx := ctxFor(t, redeliveries(s, 1)+time.Minute)
	orders := system.Orders("crash-before", 5)
	kills := killOnce(s, "before-effect", orders[2].OrderID)
	crashThenSend(t, ctx, s, kills, orders[2], orders)
	drain(t, s, redeliveries(s, 1))
	r := check(t, s, orders)
	if kills.Load() != 1 || r.Applied != 5 || r.DoubleEffects != 0 {
		t.Fatalf("kills %d, applied %d, double effects %d; want 1, 5, 0", kills.Load(), r.Applied, r.DoubleEffects)
	}
	rec := receipt(t, s, orders[2].OrderID)
	if rec.Attempts != 2 {
		t.Fatalf("receipt after crash: %+v, want attempt 2", rec)
	}
}

// TestCrashAfterEffect: the instance dies after the effect and before the
// receipt. Lease mode: the effect runs again once the lease expires — the
// documented window, counted here. Transactional mode: exactly once.
func TestCrashAfterEffect(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode        string
		wantDoubles int
	}{
		{"lease", 1},
		{"transactional", 0},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			s := startSystem(t, system.Config{Consumers: 2, ConsumerEnv: map[string]string{"IDEM_MODE": tc.mode}})
			ctx := ctxFor(t, redeliveries(s, 1)+time.Minute)
			orders := system.Orders("crash-after-"+tc.mode, 5)
			kills := killOnce(s, "after-effect", orders[1].OrderID)
			crashThenSend(t, ctx, s, kills, orders[1], orders)
			drain(t, s, redeliveries(s, 1))
			r := check(t, s, orders)
			if kills.Load() != 1 || r.Applied != 5 || r.DoubleEffects != tc.wantDoubles {
				t.Fatalf("%s mode: kills %d, applied %d, double effects %d (%v); want 1, 5, %d",
					tc.mode, kills.Load(), r.Applied, r.DoubleEffects, r.Doubled, tc.wantDoubles)
			}
			if tc.wantDoubles > 0 && !slices.Equal(r.Doubled, []string{orders[1].OrderID}) {
				t.Fatalf("doubled %v, want only the crashed order", r.Doubled)
			}
		})
	}
}

// TestTransientEffectError: the effect fails once; the record is released,
// the message comes back and the retry applies it, attempts on the receipt.
func TestTransientEffectError(t *testing.T) {
	t.Parallel()
	orders := system.Orders("transient", 3)
	s := startSystem(t, system.Config{Consumers: 2, ConsumerEnv: map[string]string{
		"FAULT_EFFECT_FAIL_KEYS":  orders[0].OrderID,
		"FAULT_EFFECT_FAIL_TIMES": "1",
	}})
	ctx := ctxFor(t, redeliveries(s, 1)+time.Minute)
	if err := s.SendRaw(ctx, orders...); err != nil {
		t.Fatal(err)
	}
	drain(t, s, redeliveries(s, 1))
	r := check(t, s, orders)
	if r.Applied != 3 || r.DoubleEffects != 0 || r.Outcomes["failed"] != 1 {
		t.Fatalf("applied %d, double effects %d, outcomes %v; want 3, 0, one failure", r.Applied, r.DoubleEffects, r.Outcomes)
	}
	rec := receipt(t, s, orders[0].OrderID)
	if rec.Status != idem.StatusCompleted || rec.Attempts != 2 {
		t.Fatalf("receipt %+v: want COMPLETED after 2 attempts", rec)
	}
}

// TestPoisonMalformedAndKeyless: messages that can never succeed end in the
// DLQ after maxReceiveCount with their reason, and leave no receipt.
func TestPoisonMalformedAndKeyless(t *testing.T) {
	t.Parallel()
	s := startSystem(t, system.Config{Consumers: 2})
	ctx := ctxFor(t, redeliveries(s, s.Queue.MaxReceiveCount)+time.Minute)
	good := system.Orders("healthy", 3)
	poison := system.Order{OrderID: "poison-1", Customer: "c", AmountCents: 1, Poison: true}
	if err := s.SendRaw(ctx, append(good, poison)...); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SendBody(ctx, `{"orderId": "malformed-1", "amountCents": `, "malformed-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SendBody(ctx, `{"customer": "c-1", "amountCents": 100}`, ""); err != nil {
		t.Fatal(err)
	}
	drain(t, s, redeliveries(s, s.Queue.MaxReceiveCount))
	r := check(t, s, append(good, poison, system.Order{OrderID: "malformed-1"}))
	if r.Applied != 3 || len(r.DeadLetters) != 3 {
		t.Fatalf("applied %d, dead letters %d; want 3 and 3", r.Applied, len(r.DeadLetters))
	}
	for _, d := range r.DeadLetters {
		if d.Receives < s.Queue.MaxReceiveCount {
			t.Errorf("dead letter %q after %d receives, want >= %d", d.OrderID, d.Receives, s.Queue.MaxReceiveCount)
		}
	}
	for _, id := range []string{"poison-1", "malformed-1"} {
		rec, found, err := s.Receipt(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if found && rec.Status != idem.StatusFailed {
			t.Errorf("%s left a %s record; only a FAILED one (with its last error) may stay", id, rec.Status)
		}
		if found {
			t.Logf("%s: FAILED record, %d attempts, last error %q", id, rec.Attempts, rec.LastError)
		}
	}
}

// TestSameKeyDifferentPayload: an order id reused with another amount is a
// mismatch: not applied twice, reported, and parked in the DLQ.
func TestSameKeyDifferentPayload(t *testing.T) {
	t.Parallel()
	s := startSystem(t, system.Config{Consumers: 2})
	ctx := ctxFor(t, redeliveries(s, s.Queue.MaxReceiveCount)+time.Minute)
	first := system.Order{OrderID: "reused-1", Customer: "c", AmountCents: 1000}
	if err := s.SendRaw(ctx, first); err != nil {
		t.Fatal(err)
	}
	drain(t, s, 30*time.Second)
	second := first
	second.AmountCents = 99999
	if err := s.SendRaw(ctx, second); err != nil {
		t.Fatal(err)
	}
	drain(t, s, redeliveries(s, s.Queue.MaxReceiveCount))
	r := check(t, s, []system.Order{first})
	if r.Applied != 1 || r.DoubleEffects != 0 || len(r.DeadLetters) != 1 || r.Outcomes["mismatch"] < 1 {
		t.Fatalf("applied %d, double %d, DLQ %d, outcomes %v; want 1, 0, 1, mismatches", r.Applied, r.DoubleEffects, len(r.DeadLetters), r.Outcomes)
	}
	if !strings.Contains(r.DeadLetters[0].Reason, "different payload") || !strings.Contains(r.DeadLetters[0].Body, "99999") {
		t.Fatalf("dead letter %+v: want the second payload, reason payload mismatch", r.DeadLetters[0])
	}
}

// TestProducerRetriggered: two producer runs with the same orders at once
// send each order once; the consumers see no duplicate.
func TestProducerRetriggered(t *testing.T) {
	t.Parallel()
	s := startSystem(t, system.Config{Consumers: 2})
	ctx := ctxFor(t, 2*time.Minute)
	orders := system.Orders("retrigger", 40)
	var wg sync.WaitGroup
	results := make([]system.ProducerResult, 2)
	for i := range results {
		wg.Go(func() {
			var err error
			if results[i], err = s.Produce(ctx, orders); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	sent := results[0].Sent + results[1].Sent
	skipped := results[0].Duplicates + results[0].InProgress + results[1].Duplicates + results[1].InProgress
	failed := results[0].Failed + results[1].Failed
	if sent > 40 || sent+skipped+failed != 80 {
		t.Fatalf("two concurrent runs: %+v; want no order sent by both, every order accounted for in each", results)
	}
	// On a loaded machine a run's time for an order can run out before its
	// batch goes ("not sent"): the scheduler runs it again, and the guard
	// sends only those.
	if failed > 0 {
		n, runs, err := produceAll(ctx, s, orders)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d orders not sent by the concurrent runs (time ran out): %d runs again sent %d", failed, runs, n)
		sent += n
	}
	if sent != 40 {
		t.Fatalf("orders sent %d in all, want 40", sent)
	}
	drain(t, s, time.Minute)
	r := check(t, s, orders)
	if r.Applied != 40 || r.DoubleEffects != 0 || r.Deliveries != 40 {
		t.Fatalf("applied %d, double %d, deliveries %d; want 40, 0, 40 (no duplicate sends)", r.Applied, r.DoubleEffects, r.Deliveries)
	}
}

// TestProducerPostSendUpdateFails: the producer sends but cannot record it.
// While its lease is live a re-run sends nothing; after the lease a re-run
// sends again (the producer cannot know the first send happened), and the
// consumer deduplicates by the same key: no double effect end to end.
func TestProducerPostSendUpdateFails(t *testing.T) {
	t.Parallel()
	s := startSystem(t, system.Config{Consumers: 2, ProducerEnv: map[string]string{"FAULT_FAIL_POST_SEND_UPDATE": "true"}})
	ctx := ctxFor(t, 2*time.Minute)
	orders := system.Orders("post-send", 20)
	first, err := s.Produce(ctx, orders)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.Produce(ctx, orders)
	if err != nil {
		t.Fatal(err)
	}
	if again.Sent != 0 || again.InProgress != 20 {
		t.Fatalf("re-run while the first send's lease is live: %+v; want nothing sent, 20 in progress (first run %+v)", again, first)
	}
	producerFn, err := s.Stack.FindFunction("Producer")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(producerFn.Timeout + time.Second) // the first run's lease (its deadline) is over
	late, err := s.Produce(ctx, orders)
	if err != nil {
		t.Fatal(err)
	}
	drain(t, s, time.Minute)
	r := check(t, s, orders)
	if r.Applied != 20 || r.DoubleEffects != 0 {
		t.Fatalf("applied %d, double effects %d; want 20, 0", r.Applied, r.DoubleEffects)
	}
	t.Logf("first run %+v; re-run in flight sent %d; re-run after the lease sent %d, suppressed by the consumer: %d duplicates",
		first, again.Sent, late.Sent+late.Failed, r.Outcomes["duplicate"])
}

// TestZombieStopsAtItsLease: instance A stalls after its effect past its
// lease (a long GC pause, a frozen sandbox); B takes the key over and
// completes. A, awake, writes nothing: the receipt is never written past the
// lease, where another attempt may hold the record. It reports Unconfirmed
// (its effect ran: its message is done), and B's receipt stays. Both
// effects ran: the lease-mode window, told and counted. (A write that did
// reach the store late would be refused by fencing: the conformance suite
// checks that on every store.)
func TestZombieStopsAtItsLease(t *testing.T) {
	t.Parallel()
	s := startSystem(t, system.Config{Consumers: 2, NoPoller: true, ConsumerEnv: map[string]string{
		"IDEM_LEASE":         "1s",
		"IDEM_SAFETY_MARGIN": "100ms",
		"IDEM_CACHE_SIZE":    "0",
	}})
	ctx := ctxFor(t, time.Minute)
	// Warm both instances up, so that A reaches the end of its effect well
	// within its lease.
	// On a loaded machine a cold instance may miss its 1 s lease: the
	// warm-up is redelivered until it succeeds, as SQS would.
	warm := system.Orders("warm", 2)
	for i, o := range warm {
		p, _ := s.Event(fmt.Sprintf("msg-warm-%d", i), o)
		for try := 1; ; try++ {
			failed, err := s.InvokeConsumer(ctx, p)
			if err == nil && len(failed) == 0 {
				break
			}
			if try == 5 {
				t.Fatalf("warm-up: %v, %v", failed, err)
			}
		}
	}
	order := system.Order{OrderID: "zombie-1", Customer: "c", AmountCents: 5}
	reached := make(chan struct{})
	var calls atomic.Int32
	s.Consumer.SetFreeze(1500 * time.Millisecond) // A stalls past its 1 s lease, within its 2 s timeout
	s.Consumer.SetFaultFunc(func(point, key string) lambdarun.Action {
		if point == "after-effect" && calls.Add(1) == 1 {
			close(reached)
			return lambdarun.Freeze
		}
		return lambdarun.Continue
	})
	payloadA, _ := s.Event("msg-zombie-a", order)
	payloadB, _ := s.Event("msg-zombie-b", order)
	var failedA []string
	var errA error
	done := make(chan struct{})
	go func() {
		defer close(done)
		failedA, errA = s.InvokeConsumer(ctx, payloadA)
	}()
	<-reached
	time.Sleep(1100 * time.Millisecond) // A's lease has run out
	failedB, err := s.InvokeConsumer(ctx, payloadB)
	if err != nil || len(failedB) != 0 {
		t.Fatalf("B: failed %v, %v; want B to take over and complete", failedB, err)
	}
	<-done
	if errA != nil || len(failedA) != 0 {
		t.Fatalf("A: failed %v, %v; want its record done (its effect ran)", failedA, errA)
	}
	// The harness reads the Lambdas' logs through a pipe: give A's a moment.
	var lines []system.Line
	for wait := time.Now().Add(5 * time.Second); time.Now().Before(wait); time.Sleep(50 * time.Millisecond) {
		if lines = s.Records.Of("msg-zombie-a"); len(lines) > 0 {
			break
		}
	}
	if len(lines) == 0 || lines[len(lines)-1].Outcome != "unconfirmed" {
		t.Fatalf("A's record: %+v, want unconfirmed", lines)
	}
	rec := receipt(t, s, order.OrderID)
	if rec.Status != idem.StatusCompleted || rec.Attempts != 2 {
		t.Fatalf("receipt %+v: want B's COMPLETED receipt on attempt 2", rec)
	}
	// A redelivery of A's message is now a plain duplicate.
	if failed, err := s.InvokeConsumer(ctx, payloadA); err != nil || len(failed) != 0 {
		t.Fatalf("redelivery of A's message: %v, %v", failed, err)
	}
	r := check(t, s, []system.Order{order})
	if r.DoubleEffects != 1 {
		t.Fatalf("double effects %d: want exactly the zombie's and the new owner's", r.DoubleEffects)
	}
	// Both effects ran: the zombie's before its lease ran out, B's after the
	// takeover. This is the lease-mode window; A is told (unconfirmed), so
	// the double effect is counted, and B's receipt is the one that stays.
	t.Logf("zombie: outcomes %v, gift cards issued %d", r.Outcomes, r.DoubleEffects+1)
}

func receipt(t *testing.T, s *system.System, orderID string) idem.Record {
	t.Helper()
	rec, found, err := s.Receipt(context.Background(), orderID)
	if err != nil || !found {
		t.Fatalf("receipt of %s: found %v, %v", orderID, found, err)
	}
	return rec
}

// produceAll runs the producer for orders until every one is sent or known
// as sent (a duplicate), re-running it after a failed or timed-out run, or
// one that left orders unsent or in progress (after the holding run's lease,
// the producer's timeout). It returns the orders sent and the runs made.
func produceAll(ctx context.Context, s *system.System, orders []system.Order) (sent, runs int, err error) {
	producer, err := s.Stack.FindFunctionByEnv(contract.EnvQueueURL)
	if err != nil {
		return 0, 0, err
	}
	for runs = 1; ; runs++ {
		res, err := s.Produce(ctx, orders)
		sent += res.Sent
		if err == nil && res.Sent+res.Duplicates == len(orders) {
			return sent, runs, nil
		}
		if runs == 6 {
			return sent, runs, fmt.Errorf("producer: orders still not sent after %d runs: %+v, %v", runs, res, err)
		}
		select {
		case <-ctx.Done():
			return sent, runs, ctx.Err()
		case <-time.After(producer.Timeout):
		}
	}
}

// TestFIFOGroupsKeepOrder: the consumer on a FIFO queue (created here with
// the template queue's settings; the stack's own queue is standard). One
// order fails once: the later orders of its message group wait for it and
// are applied after it, other groups go on, and every order is applied
// exactly once.
func TestFIFOGroupsKeepOrder(t *testing.T) {
	t.Parallel()
	orders := system.Orders("fifo", 12) // groups by i%3: 0,3,6,9 / 1,4,7,10 / 2,5,8,11
	failing := orders[3]                // second of group 0
	s := startSystem(t, system.Config{Consumers: 2, NoPoller: true, ConsumerEnv: map[string]string{
		"FAULT_EFFECT_FAIL_KEYS": failing.OrderID,
	}})
	ctx := ctxFor(t, redeliveries(s, 1)+time.Minute)
	queueURL, queueARN := createFIFOQueue(t, ctx, s)
	poller := &esm.Poller{
		Client: s.SQS, QueueURL: queueURL, QueueARN: queueARN, Region: s.Stack.Region,
		BatchSize: s.Mapping.BatchSize, MaxConcurrency: 2, WaitTime: time.Second,
		Invoker: s.Consumer, ReportBatchItemFailures: true,
	}
	pctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = poller.Run(pctx) }()
	defer func() { stop(); <-done }()

	for i, o := range orders {
		body, _ := json.Marshal(o)
		_, err := s.SQS.SendMessage(ctx, &sqs.SendMessageInput{
			QueueUrl:               aws.String(queueURL),
			MessageBody:            aws.String(string(body)),
			MessageGroupId:         aws.String(fmt.Sprintf("customer-%d", i%3)),
			MessageDeduplicationId: aws.String(o.OrderID),
			MessageAttributes: map[string]sqstypes.MessageAttributeValue{
				"orderId": {DataType: aws.String("String"), StringValue: aws.String(o.OrderID)},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Wait until every order is in the ledger.
	var applied map[string]ledgerRow
	for deadline := time.Now().Add(redeliveries(s, 1)); ; time.Sleep(500 * time.Millisecond) {
		applied = ledgerRows(t, ctx, s)
		if len(applied) == len(orders) || time.Now().After(deadline) {
			break
		}
	}
	for i, o := range orders {
		row, ok := applied[o.OrderID]
		if !ok || row.Issued != 1 {
			t.Fatalf("order %s: issued %d (found %v), want exactly 1", o.OrderID, row.Issued, ok)
		}
		if i >= 3 && row.UpdatedAt < applied[orders[i-3].OrderID].UpdatedAt {
			t.Fatalf("group %d: %s applied before %s, which was sent earlier", i%3, o.OrderID, orders[i-3].OrderID)
		}
	}
	wait := applied[failing.OrderID].UpdatedAt - applied[orders[0].OrderID].UpdatedAt
	other := applied[orders[10].OrderID].UpdatedAt - applied[orders[1].OrderID].UpdatedAt
	t.Logf("FIFO: 12 orders in 3 groups applied once each, in order; the failing order's group waited %d ms for its retry, another group finished in %d ms",
		wait, other)
	if other >= wait {
		t.Fatalf("the other groups waited for the failing one (%d ms >= %d ms)", other, wait)
	}
}

// createFIFOQueue creates a FIFO queue and its FIFO DLQ with the visibility
// timeout and maxReceiveCount of the template's queue.
func createFIFOQueue(t *testing.T, ctx context.Context, s *system.System) (url, arn string) {
	t.Helper()
	attrs := func(url string) string {
		out, err := s.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
		})
		if err != nil {
			t.Fatal(err)
		}
		return out.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	}
	create := func(name string, extra map[string]string) string {
		a := map[string]string{"FifoQueue": "true", "VisibilityTimeout": fmt.Sprint(int(s.Queue.VisibilityTimeout.Seconds()))}
		for k, v := range extra {
			a[k] = v
		}
		out, err := s.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: a})
		if err != nil {
			t.Fatal(err)
		}
		u := aws.ToString(out.QueueUrl)
		t.Cleanup(func() { _, _ = s.SQS.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(u)}) })
		return u
	}
	suffix := provision.NewSuffix()
	dlq := create("orders-dlq-"+suffix+".fifo", nil)
	redrive := fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, attrs(dlq), s.Queue.MaxReceiveCount)
	url = create("orders-"+suffix+".fifo", map[string]string{"RedrivePolicy": redrive})
	return url, attrs(url)
}

type ledgerRow struct {
	OrderID   string `dynamodbav:"orderId"`
	Issued    int    `dynamodbav:"issued"`
	UpdatedAt int64  `dynamodbav:"updatedAt"`
}

func ledgerRows(t *testing.T, ctx context.Context, s *system.System) map[string]ledgerRow {
	t.Helper()
	out, err := s.DDB.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(s.Ledger), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	var rows []ledgerRow
	if err := attributevalue.UnmarshalListOfMaps(out.Items, &rows); err != nil {
		t.Fatal(err)
	}
	m := make(map[string]ledgerRow, len(rows))
	for _, r := range rows {
		m[r.OrderID] = r
	}
	return m
}
