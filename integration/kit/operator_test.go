package kit

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// memReceipts is a receipt table of one namespace: Get, and Resolve
// fenced by the record as read.
type memReceipts struct {
	mu   sync.Mutex
	recs map[string]idem.Record
}

func (m *memReceipts) Get(_ context.Context, skey string) (idem.Record, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.recs[skey]
	return rec, ok, nil
}

func (m *memReceipts) Resolve(_ context.Context, skey string, old idem.Record, to idem.Status, expires, now time.Time) (idem.Record, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.recs[skey]
	if !ok || cur.Status != old.Status || cur.Lease != old.Lease || cur.Attempts != old.Attempts {
		return cur, true, nil
	}
	cur.Status, cur.ExpiresAt, cur.UpdatedAt = to, expires, now
	m.recs[skey] = cur
	return cur, false, nil
}

// operatorSQS is a dead-letter queue holding messages, and a queue whose
// consumer handles at once what is sent to it (deliver).
type operatorSQS struct {
	SQSAPI
	mu      sync.Mutex
	dlq     []sqstypes.Message
	deliver func(sqs.SendMessageInput)
}

func (f *operatorSQS) ReceiveMessage(_ context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &sqs.ReceiveMessageOutput{Messages: f.dlq}, nil
}

func (f *operatorSQS) DeleteMessage(_ context.Context, in *sqs.DeleteMessageInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, m := range f.dlq {
		if aws.ToString(m.ReceiptHandle) == aws.ToString(in.ReceiptHandle) {
			f.dlq = append(f.dlq[:i], f.dlq[i+1:]...)
			return &sqs.DeleteMessageOutput{}, nil
		}
	}
	return nil, fmt.Errorf("no message with handle %s", aws.ToString(in.ReceiptHandle))
}

func (f *operatorSQS) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	if aws.ToString(in.QueueUrl) != "q" {
		return nil, fmt.Errorf("sent to %s, want the consumer's queue", aws.ToString(in.QueueUrl))
	}
	f.deliver(*in)
	return &sqs.SendMessageOutput{}, nil
}

func (f *operatorSQS) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{}}, nil // drained: the consumer handled what was sent
}

// TestOperate: the kit as operator settles each held key by the probe's
// answer — not done: released, redriven, then applied by the consumer;
// done: a receipt, redriven, a duplicate — and fails a consumer that,
// once settled, applies a key twice, naming the promise.
func TestOperate(t *testing.T) {
	for _, tc := range []struct {
		name       string
		before     int // the probe's count when the operator comes
		twice      bool
		decision   string
		err        string
		notHeldNow bool
	}{
		{name: "crash before the effect: not done, then applied once", before: 0, decision: "not-done"},
		{name: "crash after the effect: done, then a duplicate", before: 1, decision: "done"},
		{name: "a consumer that applies a settled key twice", before: 0, twice: true, decision: "not-done",
			err: "crash before effect: at-most-once (hold, no reconcile): key kit1-crash-before-00 applied 2 times once settled (not-done) and redriven, want 1"},
		{name: "a key no longer held", notHeldNow: true,
			err: "crash before effect: at-most-once (hold, no reconcile): key kit1-crash-before-00 no longer held"},
	} {
		// In a bubble: the queue's two quiet polls a second apart take no time.
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const key = "kit1-crash-before-00"
				rc, err := newReceipts(aws.Config{}, Stack{Namespace: "ns"}, holding)
				if err != nil {
					t.Fatal(err)
				}
				mem := &memReceipts{recs: map[string]idem.Record{rc.storageKey(key): {Status: idem.StatusHeld, Lease: "l1", Attempts: 2}}}
				if tc.notHeldNow {
					mem.recs[rc.storageKey(key)] = idem.Record{Status: idem.StatusCompleted, Lease: "l2", Attempts: 3}
				}
				rc.store = mem
				var mu sync.Mutex
				applied := tc.before
				q := &operatorSQS{dlq: []sqstypes.Message{{
					MessageId: aws.String("m1"), ReceiptHandle: aws.String("h1"), Body: aws.String(`{"id":"` + key + `"}`),
					MessageAttributes: map[string]sqstypes.MessageAttributeValue{
						AttributeRun:            {DataType: aws.String("String"), StringValue: aws.String("kit1/crash-before-00-v0")},
						consumer.FaultAttribute: {DataType: aws.String("String"), StringValue: aws.String(consumer.FaultCrashBefore)},
					},
				}}}
				q.deliver = func(in sqs.SendMessageInput) {
					if aws.ToString(in.MessageAttributes[AttributeRun].StringValue) != "kit1/crash-before-00-v0" || aws.ToString(in.MessageBody) != `{"id":"`+key+`"}` {
						t.Errorf("redriven %+v, want the dead letter's body and attributes", in)
					}
					if _, ok := in.MessageAttributes[consumer.FaultAttribute]; ok {
						t.Errorf("redriven with %s: the copy would crash again", consumer.FaultAttribute)
					}
					rec, _, _ := mem.Get(t.Context(), rc.storageKey(key))
					mu.Lock()
					defer mu.Unlock()
					if rec.Status == idem.StatusFailed { // released: the consumer runs it
						applied++
						if tc.twice {
							applied++
						}
					}
				}
				probe := func(_ context.Context, _ Stack, keys []string) (map[string]int, error) {
					mu.Lock()
					defer mu.Unlock()
					return map[string]int{key: applied}, nil
				}
				r := &run{app: App{Applied: probe}, st: Stack{QueueURL: "q"}, sqs: q, id: "kit1", p: holding, rc: rc, retention: time.Hour}
				r.dlq = newDeadLetters(q, "dlq", "kit1")
				r.want = newExpected(holding)
				if err := r.dlq.poll(t.Context()); err != nil {
					t.Fatal(err)
				}
				r.hold("crash before effect", keyed{key: key, in: toApply, labels: []string{"crash-before-00-v0"}}, keyFate{held: true, dead: 1})
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				err = r.operate(ctx, t.Logf)
				if tc.err != "" {
					if err == nil || !strings.Contains(err.Error(), tc.err) {
						t.Fatalf("operate = %v, want an error saying %q", err, tc.err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				rec, _, _ := mem.Get(t.Context(), rc.storageKey(key))
				want := map[string]idem.Status{"done": idem.StatusCompleted, "not-done": idem.StatusFailed}[tc.decision]
				if r.held[0].decision != tc.decision || rec.Status != want || rec.ExpiresAt.IsZero() {
					t.Errorf("decided %q, the record %s expiring %v; want %q, %s, an expiry (a held record has none)", r.held[0].decision, rec.Status, rec.ExpiresAt, tc.decision, want)
				}
				if len(q.dlq) != 0 || applied != 1 {
					t.Errorf("%d messages left in the dead-letter queue, applied %d; want none, 1", len(q.dlq), applied)
				}
				if f := r.facts(logScan{}); f.held != 1 || f.settledDone != map[string]int{"done": 1, "not-done": 0}[tc.decision] {
					t.Errorf("facts %+v", f)
				}
			})
		})
	}
}
