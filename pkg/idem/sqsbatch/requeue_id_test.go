package sqsbatch_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// TestRequeuedCopyKeepsTheMessageID: keyed by MessageID, a requeued copy
// (a new message with a new id, as SQS delivers it) is the message it
// copies: once the holder has completed, it is a Duplicate, and a copy of
// the copy keeps the first id.
func TestRequeuedCopyKeepsTheMessageID(t *testing.T) {
	store := idemtest.NewMemoryStore()
	var ran atomic.Int32
	effect := func(context.Context, string, events.SQSMessage) ([]byte, error) { ran.Add(1); return nil, nil }

	// The holder: another invocation running m1's effect, until released.
	holder := newGuard(t, store)
	release, started, held := make(chan struct{}), make(chan struct{}), make(chan idem.Outcome, 1)
	go func() {
		res, _ := holder.Do(context.Background(), "m1", []byte("b"), func(ctx context.Context) ([]byte, error) {
			close(started)
			<-release
			return effect(ctx, "m1", events.SQSMessage{})
		})
		held <- res.Outcome
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the holder did not start its effect within 10 s")
	}

	var r requeues
	var rec recorder
	h, err := sqsbatch.New(newGuard(t, store), sqsbatch.MessageID, effect,
		sqsbatch.WithLogger(quiet), sqsbatch.WithMaxReceiveCount(1), sqsbatch.WithRequeue(&r), sqsbatch.WithRecordHook(rec.hook))
	if err != nil {
		t.Fatal(err)
	}
	// deliver runs m in an invocation too short to wait for the holder.
	deliver := func(m events.SQSMessage) events.SQSEventResponse {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{received(m, 1)}})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	// asSQSDelivers gives the i-th requeued message a new id.
	asSQSDelivers := func(i int) events.SQSMessage {
		t.Helper()
		if len(r.sent) <= i {
			t.Fatalf("requeued %d messages, want %d", len(r.sent), i+1)
		}
		m := r.sent[i]
		m.MessageId = fmt.Sprint("copy-", i)
		return m
	}

	if resp := deliver(msg("m1", "", "b")); len(resp.BatchItemFailures) != 0 || len(r.sent) != 1 {
		t.Fatalf("m1: failures %v, requeued %d (%v); want it requeued", failures(resp), len(r.sent), rec.records["m1"].Err)
	}
	// The copy meets the holder too: requeued again, with the first id.
	if resp := deliver(asSQSDelivers(0)); len(resp.BatchItemFailures) != 0 || len(r.sent) != 2 {
		t.Fatalf("copy-0: failures %v, requeued %d, effect ran %d; want it requeued", failures(resp), len(r.sent), ran.Load())
	}
	close(release)
	select {
	case o := <-held:
		if o != idem.Executed {
			t.Fatalf("holder: %v, want executed", o)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the holder did not complete within 10 s")
	}
	if resp := deliver(asSQSDelivers(1)); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("copy-1: failures %v, want none", failures(resp))
	}
	if o := rec.records["copy-1"].Outcome; o != idem.Duplicate || ran.Load() != 1 {
		t.Fatalf("copy of a copy after the holder completed: %v, effect ran %d times; want duplicate, once", o, ran.Load())
	}
	if a := r.sent[1].MessageAttributes[sqsbatch.MessageIDAttribute]; a.DataType != "String" || a.StringValue == nil || *a.StringValue != "m1" {
		t.Fatalf("copy of a copy: %s = %+v, want String m1", sqsbatch.MessageIDAttribute, a)
	}
}

// TestRequeueNeedsRoomForTheMessageID: a message whose attributes leave no
// room for MessageIDAttribute is not requeued (it would come back under a
// new id, a new key): it fails as without WithRequeue.
func TestRequeueNeedsRoomForTheMessageID(t *testing.T) {
	nine := msg("m1", "order-1", "b") // the key attribute and 8 more
	for i := range 8 {
		v := fmt.Sprint(i)
		nine.MessageAttributes[fmt.Sprint("a", i)] = events.SQSMessageAttribute{DataType: "String", StringValue: &v}
	}
	var r requeues
	resp, results := lastReceive(t, &r, nine)
	if len(resp.BatchItemFailures) != 1 || len(r.sent) != 0 || len(results) != 1 || results[0].Requeued {
		t.Fatalf("failures %v, requeued %d; want the record failed, nothing sent", failures(resp), len(r.sent))
	}
	eight := msg("m1", "order-1", "b")
	for i := range 7 {
		v := fmt.Sprint(i)
		eight.MessageAttributes[fmt.Sprint("a", i)] = events.SQSMessageAttribute{DataType: "String", StringValue: &v}
	}
	if resp, _ := lastReceive(t, &r, eight); len(resp.BatchItemFailures) != 0 || len(r.sent) != 1 || len(r.sent[0].MessageAttributes) != 10 {
		t.Fatalf("8 attributes: failures %v, requeued %v; want it requeued with 10 attributes", failures(resp), r.sent)
	}
}

func TestMessageIDOfACopy(t *testing.T) {
	attr := func(dataType, v string) events.SQSMessage {
		return events.SQSMessage{MessageId: "new", MessageAttributes: map[string]events.SQSMessageAttribute{
			sqsbatch.MessageIDAttribute: {DataType: dataType, StringValue: &v},
		}}
	}
	for _, tc := range []struct {
		name string
		msg  events.SQSMessage
		want string
	}{
		{"no attribute", events.SQSMessage{MessageId: "new"}, "new"},
		{"a copy", attr("String", "first"), "first"},
		{"empty", attr("String", ""), "new"},
		{"not a String", attr("Number", "42"), "new"},
	} {
		got, err := sqsbatch.MessageID(tc.msg)
		if err != nil || got != tc.want || sqsbatch.OriginalMessageID(tc.msg) != tc.want {
			t.Errorf("%s: MessageID %q, %v, OriginalMessageID %q; want %q", tc.name, got, err, sqsbatch.OriginalMessageID(tc.msg), tc.want)
		}
	}
}
