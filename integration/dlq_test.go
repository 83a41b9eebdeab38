//go:build integration

package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/exactlyonce/sqsidem/integration/internal/lambdarun"
	"github.com/exactlyonce/sqsidem/integration/internal/provision"
	"github.com/exactlyonce/sqsidem/integration/internal/system"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// scenarioPoisonMalformedAndKeyless: messages that can never succeed end in the
// DLQ after maxReceiveCount with their reason, and leave no receipt: a
// poison key (its effect fails every time: FAULT_POISON_KEYS), a body no
// key can be read from, and a JSON body without the key. None needs
// anything of the effect. The poison key's failures are not marked
// definite: at most once (hold, no reconcile) holds it after its first
// failure (HELD, never applied), the other promises release it each time.
// Its record is an operator's to look at; nobody settles it here (it
// would only fail again).
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
	if r.Applied != 3 || len(r.DeadLetters) != 3 || r.Times[poisonKey] != 0 {
		t.Fatalf("%s: applied %d, dead letters %d, the poison key applied %d times; want 3, 3, 0", s.Promise, r.Applied, len(r.DeadLetters), r.Times[poisonKey])
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
	// Released after its last failure: FAILED when the effect said the
	// failure was definite, UNKNOWN otherwise (the injected poison fault
	// does not); never a receipt. At most once: HELD, since the attempt
	// after the first failure took over an unknown outcome nothing could
	// settle.
	switch {
	case s.Promise.Is(consumer.GuaranteeAtMostOnce) && (!found || rec.Status != idem.StatusHeld):
		t.Errorf("%s: the poison key left a %s record (found %v); want it HELD", s.Promise, rec.Status, found)
	case !s.Promise.Is(consumer.GuaranteeAtMostOnce) && found && rec.Status != idem.StatusFailed && rec.Status != idem.StatusUnknown:
		t.Errorf("%s: the poison key left a %s record; only a released one (FAILED or UNKNOWN, with its last error) may stay", s.Promise, rec.Status)
	}
	if found {
		t.Logf("poison key: %s record, %d attempts, last error %q", rec.Status, rec.Attempts, rec.LastError)
	}
	settleLeft(t, s, r, good, malformed, keyless)
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
	r := settleLeft(t, s, check(t, s, first), first)
	if r.Applied != 1 || len(r.DeadLetters) != 1 || r.Outcomes["mismatch"] < 1 {
		t.Fatalf("%s: applied %d, DLQ %d, outcomes %v; want 1, 1, mismatches", s.Promise, r.Applied, len(r.DeadLetters), r.Outcomes)
	}
	if d := r.DeadLetters[0]; d.Body != string(second.Body) || !strings.Contains(d.Reason, "different payload") {
		t.Fatalf("dead letter %+v: want the second payload, reason payload mismatch", d)
	}
}

// scenarioLastReceiveRequeued (lease mode): a copy on its last allowed
// receive meets its key in progress, held by an instance whose lease (6 s)
// outlives the copy's 2 s invocation, so the copy cannot wait for it. The
// compiled consumer sends it to the real queue again, delayed until the
// holder's lease ends (sqs:SendMessage with DelaySeconds, the attribute
// sqsidem-requeues = 1), and reports it done: it is not failed into the
// DLQ. The copy SQS delivers after the delay is a duplicate of the
// holder's effect: one effect, an empty DLQ.
//
// Nothing here depends on how fast the machine is. The holder stops
// before its effect (lambdarun.Freeze) until the copy's invocation has
// ended, so the copy meets the key in progress whenever it runs; the
// delay is checked against the lease end the holder's record holds (the
// requeued copy may not be delivered before it), not against a clock
// started after an uncontrolled step. A try in which the lease had too
// little left to outlive the copy's invocation (a loaded machine between
// the holder's acquire and the copy) is made again on a fresh key.
func scenarioLastReceiveRequeued(t *testing.T) {
	s := startSystem(t, system.Config{Consumers: 1, NoPoller: true, Mode: consumer.ModeLease})
	ctx := ctxFor(t, 3*time.Minute)
	fn := s.Consumer.Function()
	fn.Name += "-holder"
	fn.Env[consumer.EnvLease], fn.Env[consumer.EnvSafetyMargin] = "6s", "100ms"
	holder, err := lambdarun.Start(ctx, fn, 1, lambdarun.WithLog(s.Records))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(holder.Stop)
	copyFn := s.Consumer.Function()

	var (
		msg       []system.Message
		leaseEnd  time.Time
		ev        events.SQSEvent
		holderErr error
	)
	for try := 1; ; try++ {
		msg = messages(t, ctx, s, fmt.Sprintf("requeued-%d", try), 1)
		reached, release := make(chan struct{}), make(chan struct{})
		var calls atomic.Int32
		holder.SetFreezeUntil(release) // in progress until the copy has been requeued
		holder.SetFaultFunc(func(point, k string) lambdarun.Action {
			if point == consumer.FaultBeforeEffect && k == msg[0].Key && calls.Add(1) == 1 {
				close(reached)
				return lambdarun.Freeze
			}
			return lambdarun.Continue
		})
		held, _ := s.Event(fmt.Sprintf("msg-holder-%d", try), msg[0])
		holderDone := make(chan struct{})
		var holderFailed []string
		go func() {
			defer close(holderDone)
			out, err := holder.Invoke(ctx, held)
			var resp events.SQSEventResponse
			if holderErr = err; err == nil {
				holderErr = json.Unmarshal(out, &resp)
			}
			for _, f := range resp.BatchItemFailures {
				holderFailed = append(holderFailed, f.ItemIdentifier)
			}
		}()
		await(t, ctx, reached, "the holder to take the lease")
		rec := receipt(t, s, msg[0].Key)
		if rec.Status != idem.StatusInProgress {
			t.Fatalf("the holder's record: %+v, want IN_PROGRESS", rec)
		}
		leaseEnd = rec.LeaseUntil

		// The copy, on its last receive (the queue's maxReceiveCount).
		payload, _ := s.Event(fmt.Sprintf("msg-copy-%d", try), msg[0])
		if err := json.Unmarshal(payload, &ev); err != nil {
			t.Fatal(err)
		}
		ev.Records[0].Attributes["ApproximateReceiveCount"] = strconv.Itoa(s.Queue.MaxReceiveCount)
		payload, _ = json.Marshal(ev)
		invoked := time.Now()
		failed, err := s.InvokeConsumer(ctx, payload)
		close(release)
		await(t, ctx, holderDone, "the holder's invocation to end")
		if time.Until(leaseEnd) < 0 || leaseEnd.Sub(invoked) < copyFn.Timeout {
			// The copy may have outlived the lease (and taken the key
			// over): not the case this scenario is about.
			t.Logf("try %d: the holder's lease ended %s after the copy was invoked, less than its %s invocation: again, on a fresh key",
				try, leaseEnd.Sub(invoked).Round(time.Millisecond), copyFn.Timeout)
			if try == 5 {
				t.Fatalf("5 tries without the lease outliving the copy's invocation")
			}
			continue
		}
		if err != nil || len(failed) != 0 {
			t.Fatalf("the copy on its last receive: failed %v, %v; want it requeued and done", failed, err)
		}
		if holderErr != nil || len(holderFailed) != 0 {
			t.Fatalf("the holder: failed %v, %v", holderFailed, holderErr)
		}
		break
	}

	// SQS holds the requeued copy until the holder's lease ends.
	var got types.Message
	var gotAt time.Time
	for got.MessageId == nil {
		out, err := s.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(s.Queue.URL), WaitTimeSeconds: 5, MaxNumberOfMessages: 1,
			MessageAttributeNames: []string{"All"},
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			if system.KeyOf(s.Key, m.MessageAttributes, aws.ToString(m.Body)) != msg[0].Key {
				// A copy an earlier try requeued.
				_, _ = s.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(s.Queue.URL), ReceiptHandle: m.ReceiptHandle})
				continue
			}
			got, gotAt = m, time.Now()
		}
	}
	// A lower bound: delivered no earlier than the lease end the record
	// held (DelaySeconds rounds up from the requeue's now to it; 100 ms
	// for the store's and the queue's millisecond clocks).
	if early := leaseEnd.Sub(gotAt); early > 100*time.Millisecond {
		t.Errorf("the requeued copy was delivered %s before the holder's lease ended (%s): want it held until then", early, leaseEnd.Format(time.RFC3339Nano))
	}
	if aws.ToString(got.Body) != string(msg[0].Body) || aws.ToString(got.MessageAttributes[sqsbatch.RequeuesAttribute].StringValue) != "1" ||
		aws.ToString(got.MessageAttributes[s.Key].StringValue) != msg[0].Key {
		t.Fatalf("requeued %q with attributes %v; want the copy's body and key, %s = 1", aws.ToString(got.Body), got.MessageAttributes, sqsbatch.RequeuesAttribute)
	}
	// Delivered: a duplicate of the holder's effect.
	ev.Records[0].MessageId, ev.Records[0].ReceiptHandle = aws.ToString(got.MessageId), aws.ToString(got.ReceiptHandle)
	ev.Records[0].Attributes["ApproximateReceiveCount"] = "1"
	payload, _ := json.Marshal(ev)
	if failed, err := s.InvokeConsumer(ctx, payload); err != nil || len(failed) != 0 {
		t.Fatalf("the requeued copy: failed %v, %v", failed, err)
	}
	if _, err := s.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(s.Queue.URL), ReceiptHandle: got.ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	r := check(t, s, msg)
	outcomes := map[string]int{} // the key's: an earlier try's are another key's
	for _, l := range s.Records.OfKey(s.StorageKey(msg[0].Key)) {
		outcomes[l.Outcome]++
	}
	if r.Applied != 1 || len(r.DeadLetters) != 0 || outcomes["requeued"] != 1 || outcomes["duplicate"] != 1 {
		t.Fatalf("%s: applied %d, DLQ %d, the key's outcomes %v; want 1, 0, one requeued and one duplicate",
			s.Promise, r.Applied, len(r.DeadLetters), outcomes)
	}
	t.Logf("requeued copy delivered %s after the holder's lease ended; the key's outcomes %v", gotAt.Sub(leaseEnd).Round(100*time.Millisecond), outcomes)
}

// scenarioDoneOnLastReceiveSurvivesACrash: a message done on its last
// receive, in a batch that another record then crashes (SIGKILL at its
// effect: an out-of-memory kill, a segfault), never reaches the DLQ: the
// compiled consumer deleted it as soon as it was done
// (sqsbatch.WithDelete), not only through the batch response the crash
// swallowed.
//
// The guarantee checked: the done message is gone from the queue (neither
// visible nor in flight) and the DLQ once the invocation is killed. The
// event waited for: the crasher, at the start of its effect, kills the
// invocation only once the done record has logged its outcome, which it
// does after its delete, however long that takes. The batch runs on an
// instance whose invocation outlasts the scenario, so that no deadline
// ends the done record (or the crasher's wait) first on a slow machine.
func scenarioDoneOnLastReceiveSurvivesACrash(t *testing.T) {
	s := startSystem(t, system.Config{Consumers: 1, NoPoller: true})
	limit := 3 * time.Minute
	ctx := ctxFor(t, limit)
	fn := s.Consumer.Function()
	fn.Name += "-crashmate"
	fn.Timeout = limit
	batch, err := lambdarun.Start(ctx, fn, 1, lambdarun.WithLog(s.Records))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(batch.Stop)
	msgs := messages(t, ctx, s, "crashmate", 2)
	done, crasher := msgs[0], msgs[1]
	if err := s.SendRaw(ctx, done); err != nil {
		t.Fatal(err)
	}
	// Receive it up to its last allowed receive, as the mapping would have;
	// the last receive hides it for longer than the scenario, so that only
	// a delete can make it leave.
	var last types.Message
	for n := 1; n <= s.Queue.MaxReceiveCount; n++ {
		visibility := int32(1) // (the SDK leaves a 0 out: the queue's 12 s)
		if n == s.Queue.MaxReceiveCount {
			visibility = int32(limit / time.Second)
		}
		for last.MessageId = nil; last.MessageId == nil; {
			out, err := s.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
				QueueUrl: aws.String(s.Queue.URL), WaitTimeSeconds: 5, VisibilityTimeout: visibility,
				MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount},
			})
			if err != nil {
				t.Fatalf("receive %d: %v", n, err)
			}
			if len(out.Messages) > 0 {
				last = out.Messages[0]
			}
		}
	}
	var ev events.SQSEvent
	for i, m := range []system.Message{done, crasher} {
		p, _ := s.Event(fmt.Sprint("msg-", i), m)
		var one events.SQSEvent
		if err := json.Unmarshal(p, &one); err != nil {
			t.Fatal(err)
		}
		ev.Records = append(ev.Records, one.Records...)
	}
	ev.Records[0].MessageId, ev.Records[0].ReceiptHandle = aws.ToString(last.MessageId), aws.ToString(last.ReceiptHandle)
	ev.Records[0].Attributes["ApproximateReceiveCount"] = last.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)]
	if got := ev.Records[0].Attributes["ApproximateReceiveCount"]; got != strconv.Itoa(s.Queue.MaxReceiveCount) {
		t.Fatalf("the done message's last receive was its receive %s, want %d", got, s.Queue.MaxReceiveCount)
	}
	var waited atomic.Bool // the crasher saw the done record's outcome
	batch.SetFaultFunc(func(point, key string) lambdarun.Action {
		if point != consumer.FaultBeforeEffect || key != crasher.Key {
			return lambdarun.Continue
		}
		for len(s.Records.Of(ev.Records[0].MessageId)) == 0 {
			select {
			case <-ctx.Done():
				return lambdarun.Kill // the checks below say what was missing
			case <-time.After(20 * time.Millisecond):
			}
		}
		waited.Store(true)
		return lambdarun.Kill
	})
	payload, _ := json.Marshal(ev)
	out, err := batch.Invoke(ctx, payload)
	if !errors.Is(err, lambdarun.ErrCrashed) {
		t.Fatalf("the invocation answered %s, %v; want it killed by the crasher", out, err)
	}
	if !waited.Load() {
		t.Fatalf("the crasher killed the invocation before the done record logged its outcome: %v", ctx.Err())
	}
	if lines := s.Records.Of(ev.Records[0].MessageId); len(lines) != 1 || lines[0].Outcome != "executed" {
		t.Fatalf("the done record logged %+v, want executed", lines)
	}
	// Not deleted, it would be in flight (until its visibility ends, then
	// visible, then in the DLQ on its next receive).
	for _, q := range []*provision.Queue{s.Queue, s.DLQ} {
		visible, inFlight, err := system.QueueDepth(ctx, s.SQS, q.URL)
		if err != nil {
			t.Fatal(err)
		}
		if visible != 0 || inFlight != 0 {
			t.Fatalf("%s holds %d visible and %d in flight; want the done message deleted at once", q.LogicalID, visible, inFlight)
		}
	}
	got, err := s.Applied(ctx, []string{done.Key})
	if err != nil || got[done.Key] != 1 {
		t.Fatalf("applied %v, %v; want once", got, err)
	}
}
