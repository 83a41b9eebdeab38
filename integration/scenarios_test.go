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

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/integration/internal/lambdarun"
	"github.com/exactlyonce/sqsidem/integration/internal/system"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// Every scenario checks the invariant: each message sent is applied, or
// sits in the DLQ with a reason; nothing vanishes; and no key is applied
// more often than the consumer promises. What "applied" means is the
// effect's probe's answer (system.Probe), so the scenarios hold for any
// effect; what the consumer promises is what it says of itself at init
// (system.System.Promise, from the runtime's "consumer ready" line: its
// mode, unknown-outcome policy and whether its effect reconciles), so
// they hold for any configuration a fork chooses:
//
//   - exactly once (transactional, or lease mode with a Reconcile):
//     applied once;
//   - at most once (lease, hold, no reconcile): never twice, never run
//     again after an unknown outcome; a key whose outcome it could not
//     know is HELD, its messages in the DLQ with the reason, and the
//     scenario plays the operator (operator_test.go): resolve from the
//     probe's answer, redrive, then applied once;
//   - at least once (lease, retry, no reconcile): never three times,
//     twice only with a rerun counted for the key (a crash after the
//     effect gives 2), never dead-lettered for an unknown outcome.
//
// A scenario that needs a mode runs in it (system.Config.Mode), whatever
// the template says, and is skipped when the effect does not implement
// it; the others run in the template's.

// TestScenarios is the system-level proof: each scenario on its own
// provisioned copy of the stack, in parallel (go test -parallel bounds
// them), since most of their time is spent waiting for visibility
// timeouts. `go test -run 'TestScenarios/CrashAfterEffect'` runs one.
func TestScenarios(t *testing.T) {
	t.Parallel()
	for _, sc := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"ThousandMessagesWithDuplicates", scenarioThousandMessagesWithDuplicates},
		{"OneKeyToEightInstances", scenarioOneKeyToEightInstances},
		{"ProducerRetriggered", scenarioProducerRetriggered},
		{"ProducerPostSendUpdateFails", scenarioProducerPostSendUpdateFails},
		{"CrashBeforeEffect", scenarioCrashBeforeEffect},
		{"CrashAfterEffect", scenarioCrashAfterEffect},
		{"TransientEffectError", scenarioTransientEffectError},
		{"ZombieStopsAtItsLease", scenarioZombieStopsAtItsLease},
		{"PoisonMalformedAndKeyless", scenarioPoisonMalformedAndKeyless},
		{"SameKeyDifferentPayload", scenarioSameKeyDifferentPayload},
		{"LastReceiveRequeued", scenarioLastReceiveRequeued},
		{"DoneOnLastReceiveSurvivesACrash", scenarioDoneOnLastReceiveSurvivesACrash},
		{"FIFOGroupsKeepOrder", scenarioFIFOGroupsKeepOrder},
		{"RemoteEffects", scenarioRemoteEffects},
	} {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			sc.run(t)
		})
	}
}

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

// await waits for ch to be closed, at most until ctx ends, and fails the
// test saying what it waited for.
func await(t *testing.T, ctx context.Context, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatalf("waiting for %s: %v", what, ctx.Err())
	}
}

// deliverUntilDone invokes pool with payload, an SQS event, again and
// again, as SQS delivers a message again whose record failed, until an
// invocation answers with no batch item failure, and returns how many it
// took. It is how a test waits for a record to be done when being done on
// the first delivery is a fast path that a loaded machine may
// legitimately not take (an effect that outlasts its lease, a key still
// leased by another attempt).
func deliverUntilDone(t *testing.T, ctx context.Context, pool *lambdarun.Pool, payload []byte, what string) int {
	t.Helper()
	for n := 1; ; n++ {
		out, err := pool.Invoke(ctx, payload)
		if err == nil {
			var resp events.SQSEventResponse
			if err = json.Unmarshal(out, &resp); err == nil && len(resp.BatchItemFailures) == 0 {
				return n
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %d deliveries, the last answered %s, %v: %v", what, n, out, err, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// scenarioThousandMessagesWithDuplicates: 1,000 messages published by the
// producer in chunks, 30% duplicates (300 re-triggered producer sends
// plus 300 raw duplicate messages), 4 consumer instances (with
// -per-process, as few processes running as many invocations each, and
// then some invocations must have shared a process).
func scenarioThousandMessagesWithDuplicates(t *testing.T) {
	s := startSystem(t, system.Config{Consumers: processes(4)})
	ctx := ctxFor(t, 5*time.Minute)
	msgs := messages(t, ctx, s, "bulk", 1000)
	start := time.Now()

	// Two producer instances publish in chunks of 25. A run that fails or
	// times out, or leaves messages unsent or in progress (a timed-out
	// run's lease), is run again for its chunk, as a scheduler would,
	// until every message of the chunk is sent or known as sent: the
	// producer's guard keeps the re-runs from sending one twice.
	chunks := slices.Collect(slices.Chunk(msgs, 25))
	var sent, reruns atomic.Int64
	var wg sync.WaitGroup
	work := make(chan []system.Message)
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
		select {
		case work <- chunk:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	// The scheduler re-triggers the first 300: all sent already, so the
	// producer's guard sends none of them again — none whose send has its
	// receipt. (A send whose receipt was not written, on a loaded machine,
	// is sent again once its lease has ended: the producer's own window,
	// which the consumer deduplicates.)
	for j, chunk := range chunks[:12] {
		receipts := 0
		for _, m := range chunk {
			if rec, found, err := s.ProducerRecord(ctx, m.Key); err == nil && found && rec.Status == idem.StatusCompleted {
				receipts++
			}
		}
		switch res, err := s.Produce(ctx, chunk); {
		case err != nil:
			t.Logf("re-triggered producer, chunk %d: %v (a loaded machine: the run proves nothing)", j, err)
		case res.Duplicates < receipts || res.Sent > len(chunk)-receipts:
			t.Errorf("re-triggered producer, chunk %d: %+v; want the %d messages with a receipt duplicates, none sent again", j, res, receipts)
		case res.Sent > 0:
			t.Logf("re-triggered producer, chunk %d: %d sent again, whose first send's receipt was never written (the producer's window)", j, res.Sent)
		}
	}
	// Another upstream sends 300 raw duplicates the producer never saw.
	var dups []system.Message
	for i := 0; i < len(msgs); i += 10 {
		dups = append(dups, msgs[i], msgs[i+3], msgs[i+7])
	}
	if err := s.SendRaw(ctx, dups...); err != nil {
		t.Fatal(err)
	}
	drain(t, s, 4*time.Minute)
	elapsed := time.Since(start)

	first := check(t, s, msgs)
	t.Logf("producer: %d messages sent, %d runs re-run after a failure or timeout", sent.Load(), reruns.Load())
	t.Logf("throughput: %d deliveries in %.1fs from the first send to an empty queue: %.0f msgs/s (2 cores, emulators included)",
		first.Deliveries, elapsed.Seconds(), float64(first.Deliveries)/elapsed.Seconds())
	// The DLQ holds no copy of any order, but for what the runbook hands a
	// person when a loaded 2-core machine ran a message out of receives: a
	// store that failed (its requests timed out, as DynamoDB Local's
	// transactions do there), an effect that ran out of time (its
	// deadline, or none left after the lease's margin), and, at most once,
	// a key held (an effect that outlived its lease); its order applied by
	// another copy or not. Those not applied are settled and redriven
	// (settleLeft), then applied once: nothing lost, however many a loaded
	// machine left. Any other reason (a mismatch, no key) is a fault.
	storeFailed, timedOut, held := 0, 0, 0
	for _, d := range first.DeadLetters {
		switch {
		case strings.Contains(d.Reason, idem.ErrStore.Error()):
			storeFailed++
		case strings.Contains(d.Reason, context.DeadlineExceeded.Error()):
			timedOut++
		case s.Promise.Is(consumer.GuaranteeAtMostOnce) && strings.Contains(d.Reason, idem.ErrHeld.Error()):
			held++
		default:
			t.Errorf("DLQ: key %q dead-lettered for another reason than a loaded machine's (the store, the time, %s): %s", d.Key, s.Promise, d.Reason)
		}
	}
	if storeFailed+timedOut+held > 0 {
		t.Logf("DLQ: %d message(s) dead-lettered on a store failure, %d out of time, %d held (a loaded machine): the operator's", storeFailed, timedOut, held)
	}
	r := settleLeft(t, s, first, msgs)
	if r.Applied != 1000 {
		t.Fatalf("%s: applied %d of 1000 keys, double effects %d, DLQ %d (%d store failures, %d out of time, %d held before the operator)",
			s.Promise, r.Applied, r.DoubleEffects, len(r.DeadLetters), storeFailed, timedOut, held)
	}
	// A commit or receipt that timed out at the deadline but landed makes
	// its redelivery a duplicate: fewer than 1,000 may say "executed" (or
	// "rerun", an unknown outcome's effect run again without a reconcile).
	// A copy of a key held (at most once) is held too: suppressed.
	suppressed := r.Outcomes["duplicate"] + r.Outcomes["in_progress"] + r.Outcomes["held"]
	if ran := r.Outcomes["executed"] + r.Outcomes["rerun"]; ran > 1000+len(r.Reruns) || suppressed < 300 {
		t.Fatalf("outcomes %v: want at most 1000 executed (and a rerun for each key run again) and the 300 duplicates suppressed", r.Outcomes)
	}
	// The shape the consumer ran in, as the harness ran it: the one asked
	// for (-per-process), and with room for two invocations in a process
	// and two poller loops (a mapping that allows two batches at once),
	// some batches shared a process.
	per, loops, inFlight := s.Consumer.Function().Concurrency, s.Poller.MaxConcurrency, s.Consumer.Stats().MaxInFlight
	t.Logf("consumer: %d process(es) of %d invocation(s), %d poller loop(s); at most %d invocations in one process at once", len(s.Consumer.PIDs()), per, loops, inFlight)
	if per != *perProcess {
		t.Errorf("-per-process %d: the consumer's processes ran %d invocations at once", *perProcess, per)
	}
	if per > 1 && loops > 1 && inFlight < 2 {
		t.Errorf("%d invocations per process, %d poller loops: no two of the batches shared a process (at most %d at once): the scenario did not run the shape it claims", per, loops, inFlight)
	}
}

// scenarioOneKeyToEightInstances delivers the same message to 8 consumer
// instances at the same moment (with -per-process 8: to 8 invocations in
// one process, which share its Guard and cache).
func scenarioOneKeyToEightInstances(t *testing.T) {
	s := startSystem(t, system.Config{Consumers: processes(8), NoPoller: true})
	ctx := ctxFor(t, time.Minute)
	msgs := messages(t, ctx, s, "same", 1)
	payload, err := s.Event("msg-same-0", msgs[0])
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var ok, retry atomic.Int32
	start := make(chan struct{})
	for range 8 {
		wg.Go(func() {
			select {
			case <-start:
			case <-ctx.Done():
				return
			}
			failed, err := s.InvokeConsumer(ctx, payload)
			switch {
			case err != nil:
				t.Errorf("invoke: %v", err)
			case len(failed) == 0:
				ok.Add(1)
			default:
				retry.Add(1) // in progress: comes back after the holder's lease
			}
		})
	}
	close(start)
	wg.Wait()
	r := check(t, s, msgs)
	// One ran the effect; the others found it in progress or done. (On a
	// loaded machine the one may outlive its lease, and another take the
	// key over: reconciled, held, or at least once run again.)
	ran := r.Outcomes["executed"] + r.Outcomes["rerun"]
	if r.Applied != 1 || ran < 1 || (ran > 1 && !s.Promise.Is(consumer.GuaranteeAtLeastOnce)) {
		t.Fatalf("%s: 8 concurrent deliveries: %+v", s.Promise, r)
	}
	t.Logf("8 concurrent deliveries: %d succeeded (%d ran the effect, %d duplicates), %d told to retry (in progress)", ok.Load(), ran, r.Outcomes["duplicate"], retry.Load())
}

// scenarioProducerRetriggered: two producer runs with the same messages at
// once send each message once; the consumers see no duplicate.
func scenarioProducerRetriggered(t *testing.T) {
	s := startSystem(t, system.Config{Consumers: 2})
	ctx := ctxFor(t, 2*time.Minute)
	msgs := messages(t, ctx, s, "retrigger", 40)
	var wg sync.WaitGroup
	results := make([]system.ProducerResult, 2)
	errs := make([]error, 2)
	for i := range results {
		wg.Go(func() { results[i], errs[i] = s.Produce(ctx, msgs) })
	}
	wg.Wait()
	sent, skipped, failed, answered := 0, 0, 0, 0
	for i, r := range results {
		if errs[i] != nil {
			// A run that timed out on a loaded machine says nothing of what
			// it sent; a scheduler runs it again (below).
			t.Logf("run %d: %v", i, errs[i])
			continue
		}
		answered++
		sent, skipped, failed = sent+r.Sent, skipped+r.Duplicates+r.InProgress, failed+r.Failed
	}
	if sent > 40 || sent+skipped+failed != 40*answered {
		t.Fatalf("two concurrent runs: %+v; want no message sent by both, every message accounted for in each", results)
	}
	// On a loaded machine a run's time for a message can run out before
	// its batch goes ("not sent"): the scheduler runs it again, and the
	// guard sends only those.
	if failed > 0 || answered < 2 {
		n, runs, err := produceAll(ctx, s, msgs)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d messages not sent by the concurrent runs, %d runs unanswered: %d runs again sent %d", failed, 2-answered, runs, n)
		sent += n
	}
	if answered == 2 && sent != 40 {
		t.Fatalf("messages sent %d in all, want 40", sent)
	}
	drain(t, s, time.Minute)
	r := settleLeft(t, s, check(t, s, msgs), msgs)
	if r.Applied != 40 {
		t.Fatalf("%s: applied %d of 40 keys", s.Promise, r.Applied)
	}
	// A run that timed out may have sent messages whose receipts it never
	// wrote; once their leases ended a re-run sent them again, and the
	// consumer took those copies for duplicates. The guarantee checked:
	// no message sent twice, i.e. 40 distinct messages delivered (a
	// message the consumer failed and got again counts once: on a loaded
	// machine the effect may time out and be reconciled).
	sentIDs := map[string]bool{}
	for _, l := range s.Records.All() {
		if l.MessageID != "" {
			sentIDs[l.MessageID] = true
		}
	}
	if answered == 2 && len(sentIDs) != 40 {
		t.Fatalf("%d distinct messages delivered (%d deliveries); want 40 (no duplicate sends)", len(sentIDs), r.Deliveries)
	}
}

// scenarioProducerPostSendUpdateFails: the producer sends but cannot record
// it. A re-run sends nothing while the first run's lease is live (another
// instance finds the messages in progress; the instance that sent owes
// their receipts and never sends again); after the lease another instance
// sends again (it cannot know the first send happened), and the consumer
// deduplicates by the same key: no double effect end to end.
func scenarioProducerPostSendUpdateFails(t *testing.T) {
	s := startSystem(t, system.Config{Consumers: 2, ProducerEnv: map[string]string{contract.EnvFaultFailPostSendUpdate: "true"}})
	ctx := ctxFor(t, 2*time.Minute)
	msgs := messages(t, ctx, s, "post-send", 20)
	first, err := s.Produce(ctx, msgs)
	if err != nil {
		t.Fatal(err)
	}
	// The first run's leases, as its records hold them (its deadline): the
	// re-run is checked against them, not against how long the first run
	// happened to take.
	var earliest, latest time.Time
	released := map[idem.Status]int{} // records the first run did not leave leased
	for _, m := range msgs {
		rec, found, err := s.ProducerRecord(ctx, m.Key)
		if err != nil || !found {
			t.Fatalf("the producer's record of %s after the first run: found %v, %v", m.Key, found, err)
		}
		if rec.Status != idem.StatusInProgress {
			// On a loaded machine the send itself may have run out of
			// time: released, its outcome unknown.
			released[rec.Status]++
			continue
		}
		if earliest.IsZero() || rec.LeaseUntil.Before(earliest) {
			earliest = rec.LeaseUntil
		}
		if rec.LeaseUntil.After(latest) {
			latest = rec.LeaseUntil
		}
	}
	again, err := s.Produce(ctx, msgs)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case len(released) > 0:
		t.Logf("re-run %+v after a first run that released %v of its records (a loaded machine): not checked", again, released)
	case time.Now().After(earliest):
		// The re-run may have acquired after a lease ended (a loaded
		// machine): what it sent then proves nothing either way.
		t.Logf("re-run %+v ended after the first run's leases began to end (%s): not checked", again, earliest.Format(time.RFC3339Nano))
	case again.Sent != 0 || again.InProgress+again.Failed != 20:
		t.Fatalf("re-run while the first send's lease is live: %+v; want nothing sent (first run %+v)", again, first)
	}
	// The first run's leases are over (a lower bound from the records).
	if wait := time.Until(latest); wait > 0 {
		time.Sleep(wait + 100*time.Millisecond)
	}
	var late []system.ProducerResult
	for range 2 { // both instances: one owes the receipts, the other sends again
		res, err := s.Produce(ctx, msgs)
		if err != nil {
			// The first run sent every message already: a run that timed
			// out on a loaded machine only sends no copy.
			t.Logf("re-run after the leases: %v (a loaded machine)", err)
			continue
		}
		late = append(late, res)
	}
	drain(t, s, time.Minute)
	r := settleLeft(t, s, check(t, s, msgs), msgs)
	if r.Applied != 20 {
		t.Fatalf("%s: applied %d of 20 keys", s.Promise, r.Applied)
	}
	t.Logf("first run %+v; re-run in flight %+v; re-runs after the lease %+v; suppressed by the consumer: %d duplicates",
		first, again, late, r.Outcomes["duplicate"])
}

// produceAll runs the producer for msgs until every one is sent or known
// as sent (a duplicate), re-running it after a failed or timed-out run, or
// one that left messages unsent or in progress (after the holding run's
// lease, the producer's timeout). It returns the messages sent and the
// runs made.
func produceAll(ctx context.Context, s *system.System, msgs []system.Message) (sent, runs int, err error) {
	producer, err := s.Stack.FindFunctionByEnv(contract.EnvQueueURL)
	if err != nil {
		return 0, 0, err
	}
	for runs = 1; ; runs++ {
		res, err := s.Produce(ctx, msgs)
		sent += res.Sent
		if err == nil && res.Sent+res.Duplicates == len(msgs) {
			return sent, runs, nil
		}
		// Run again, as a scheduler would, for as long as the scenario
		// may take: on a loaded machine a run can time out many times.
		select {
		case <-ctx.Done():
			return sent, runs, fmt.Errorf("producer: messages still not sent after %d runs: %+v, %v: %w", runs, res, err, ctx.Err())
		case <-time.After(producer.Timeout):
		}
	}
}
