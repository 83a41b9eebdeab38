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
	// Released after its last failure: FAILED when the effect said the
	// failure was definite, UNKNOWN otherwise (the injected poison fault
	// does not); never a receipt, never held.
	if found && rec.Status != idem.StatusFailed && rec.Status != idem.StatusUnknown {
		t.Errorf("the poison key left a %s record; only a released one (FAILED or UNKNOWN, with its last error) may stay", rec.Status)
	}
	if found {
		t.Logf("poison key: %s record, %d attempts, last error %q", rec.Status, rec.Attempts, rec.LastError)
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

// scenarioLastReceiveRequeued (lease mode): a copy on its last allowed
// receive meets its key in progress, held by an instance whose lease (6 s)
// outlives the copy's 2 s invocation, so the copy cannot wait for it. The
// compiled consumer sends it to the real queue again, delayed until the
// holder's lease ends (sqs:SendMessage with DelaySeconds, the attribute
// sqsidem-requeues = 1), and reports it done: it is not failed into the
// DLQ. The copy SQS delivers after the delay is a duplicate of the
// holder's effect: one effect, an empty DLQ.
func scenarioLastReceiveRequeued(t *testing.T) {
	s := startSystem(t, system.Config{Consumers: 1, NoPoller: true, Mode: consumer.ModeLease})
	ctx := ctxFor(t, 2*time.Minute)
	fn := s.Consumer.Function()
	fn.Name += "-holder"
	fn.Env[consumer.EnvLease], fn.Env[consumer.EnvSafetyMargin] = "6s", "100ms"
	holder, err := lambdarun.Start(ctx, fn, 1, lambdarun.WithLog(s.Records))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(holder.Stop)
	msg := messages(t, ctx, s, "requeued", 1)
	reached := make(chan struct{})
	var calls atomic.Int32
	holder.SetFreeze(time.Second) // in progress while the copy arrives
	holder.SetFaultFunc(func(point, _ string) lambdarun.Action {
		if point == consumer.FaultBeforeEffect && calls.Add(1) == 1 {
			close(reached)
			return lambdarun.Freeze
		}
		return lambdarun.Continue
	})
	held, _ := s.Event("msg-holder", msg[0])
	holderDone := make(chan struct{})
	var holderFailed []string
	var holderErr error
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

	// The copy, on its last receive (the queue's maxReceiveCount).
	var ev events.SQSEvent
	payload, _ := s.Event("msg-copy", msg[0])
	if err := json.Unmarshal(payload, &ev); err != nil {
		t.Fatal(err)
	}
	ev.Records[0].Attributes["ApproximateReceiveCount"] = strconv.Itoa(s.Queue.MaxReceiveCount)
	payload, _ = json.Marshal(ev)
	sent := time.Now()
	failed, err := s.InvokeConsumer(ctx, payload)
	if err != nil || len(failed) != 0 {
		t.Fatalf("the copy on its last receive: failed %v, %v; want it requeued and done", failed, err)
	}
	await(t, ctx, holderDone, "the holder's invocation to end")
	if holderErr != nil || len(holderFailed) != 0 {
		t.Fatalf("the holder: failed %v, %v", holderFailed, holderErr)
	}

	// SQS holds the requeued copy until the holder's lease ends.
	var got types.Message
	for got.MessageId == nil {
		out, err := s.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(s.Queue.URL), WaitTimeSeconds: 5, MaxNumberOfMessages: 1,
			MessageAttributeNames: []string{"All"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) > 0 {
			got = out.Messages[0]
		}
	}
	delay := time.Since(sent)
	if delay < 4*time.Second {
		t.Errorf("the requeued copy was delivered after %s, want it held until the holder's lease ends (about 6 s)", delay)
	}
	if aws.ToString(got.Body) != string(msg[0].Body) || aws.ToString(got.MessageAttributes[sqsbatch.RequeuesAttribute].StringValue) != "1" ||
		aws.ToString(got.MessageAttributes[s.Key].StringValue) != msg[0].Key {
		t.Fatalf("requeued %q with attributes %v; want the copy's body and key, %s = 1", aws.ToString(got.Body), got.MessageAttributes, sqsbatch.RequeuesAttribute)
	}
	// Delivered: a duplicate of the holder's effect.
	ev.Records[0].MessageId, ev.Records[0].ReceiptHandle = aws.ToString(got.MessageId), aws.ToString(got.ReceiptHandle)
	ev.Records[0].Attributes["ApproximateReceiveCount"] = "1"
	payload, _ = json.Marshal(ev)
	if failed, err := s.InvokeConsumer(ctx, payload); err != nil || len(failed) != 0 {
		t.Fatalf("the requeued copy: failed %v, %v", failed, err)
	}
	if _, err := s.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(s.Queue.URL), ReceiptHandle: got.ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	r := check(t, s, msg)
	if r.Applied != 1 || r.DoubleEffects != 0 || len(r.DeadLetters) != 0 || r.Outcomes["requeued"] != 1 || r.Outcomes["duplicate"] != 1 {
		t.Fatalf("applied %d, doubles %d, DLQ %d, outcomes %v; want 1, 0, 0, one requeued and one duplicate",
			r.Applied, r.DoubleEffects, len(r.DeadLetters), r.Outcomes)
	}
	t.Logf("requeued copy delivered %s after the copy's invocation; outcomes %v", delay.Round(100*time.Millisecond), r.Outcomes)
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
