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
)

// Every scenario checks the invariant: each message sent is applied
// exactly once, or sits in the DLQ with a reason; nothing vanishes. What
// "applied" means is the effect's probe's answer (system.Probe), so the
// scenarios hold for any effect. A scenario that needs a mode runs in it
// (system.Config.Mode), whatever the template says, and is skipped when
// the effect does not implement it; the others run in the template's.

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
// plus 300 raw duplicate messages), 4 consumer instances.
func scenarioThousandMessagesWithDuplicates(t *testing.T) {
	s := startSystem(t, system.Config{Consumers: 4})
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
	// producer's guard sends none of them again.
	for j, chunk := range chunks[:12] {
		res, err := s.Produce(ctx, chunk)
		if err != nil || res.Sent != 0 || res.Duplicates != len(chunk) {
			t.Errorf("re-triggered producer, chunk %d: %+v, %v; want %d duplicates, nothing sent", j, res, err, len(chunk))
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

	r := check(t, s, msgs)
	t.Logf("producer: %d messages sent, %d runs re-run after a failure or timeout", sent.Load(), reruns.Load())
	t.Logf("throughput: %d deliveries in %.1fs from the first send to an empty queue: %.0f msgs/s (2 cores, emulators included)",
		r.Deliveries, elapsed.Seconds(), float64(r.Deliveries)/elapsed.Seconds())
	// The DLQ holds no copy of any order, with one exception: a message
	// dead-lettered because the store failed (the reason of its last
	// receive; its requests timed out, as DynamoDB Local's transactions do
	// on a loaded 2-core machine) is a real failure, and its order may or
	// may not have been applied by another copy. A few of those at most;
	// nothing lost (check).
	storeFailed := 0
	for _, d := range r.DeadLetters {
		if !strings.Contains(d.Reason, idem.ErrStore.Error()) {
			t.Errorf("DLQ: key %q dead-lettered for another reason than a store failure: %s", d.Key, d.Reason)
			continue
		}
		storeFailed++
	}
	if storeFailed > 0 {
		t.Logf("DLQ: %d message(s) dead-lettered on a store failure (a loaded machine); accepted, their keys are accounted for", storeFailed)
	}
	if r.DoubleEffects != 0 || r.Applied < 1000-storeFailed || storeFailed > 10 {
		t.Fatalf("applied %d, double effects %d, DLQ %d (%d store failures); want 1000 (less keys dead-lettered on the store), 0, at most 10 store failures",
			r.Applied, r.DoubleEffects, len(r.DeadLetters), storeFailed)
	}
	// A commit or receipt that timed out at the deadline but landed makes
	// its redelivery a duplicate: fewer than 1,000 may say "executed".
	if r.Outcomes["executed"] > 1000 || r.Outcomes["duplicate"]+r.Outcomes["in_progress"] < 300 {
		t.Fatalf("outcomes %v: want at most 1000 executed and the 300 duplicates suppressed", r.Outcomes)
	}
}

// scenarioOneKeyToEightInstances delivers the same message to 8 consumer
// instances at the same moment.
func scenarioOneKeyToEightInstances(t *testing.T) {
	s := startSystem(t, system.Config{Consumers: 8, NoPoller: true})
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
	if r.Applied != 1 || r.DoubleEffects != 0 || r.Outcomes["executed"] != 1 {
		t.Fatalf("8 concurrent deliveries: %+v", r)
	}
	t.Logf("8 concurrent deliveries: %d succeeded (1 executed, %d duplicates), %d told to retry (in progress)", ok.Load(), r.Outcomes["duplicate"], retry.Load())
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
	r := check(t, s, msgs)
	if r.Applied != 40 || r.DoubleEffects != 0 {
		t.Fatalf("applied %d, double %d; want 40, 0", r.Applied, r.DoubleEffects)
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
	again, err := s.Produce(ctx, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if again.Sent != 0 || again.InProgress+again.Failed != 20 {
		t.Fatalf("re-run while the first send's lease is live: %+v; want nothing sent (first run %+v)", again, first)
	}
	producerFn, err := s.Stack.FindFunctionByEnv(contract.EnvQueueURL)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(producerFn.Timeout + time.Second) // the first run's lease (its deadline) is over
	var late []system.ProducerResult
	for range 2 { // both instances: one owes the receipts, the other sends again
		res, err := s.Produce(ctx, msgs)
		if err != nil {
			t.Fatal(err)
		}
		late = append(late, res)
	}
	drain(t, s, time.Minute)
	r := check(t, s, msgs)
	if r.Applied != 20 || r.DoubleEffects != 0 {
		t.Fatalf("applied %d, double effects %d; want 20, 0", r.Applied, r.DoubleEffects)
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
		if runs == 6 {
			return sent, runs, fmt.Errorf("producer: messages still not sent after %d runs: %+v, %v", runs, res, err)
		}
		select {
		case <-ctx.Done():
			return sent, runs, ctx.Err()
		case <-time.After(producer.Timeout):
		}
	}
}
