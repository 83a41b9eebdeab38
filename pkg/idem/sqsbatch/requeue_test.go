package sqsbatch_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// requeues records the messages requeued, or fails with err.
type requeues struct {
	err error

	mu     sync.Mutex
	sent   []events.SQSMessage
	delays []time.Duration
}

func (r *requeues) Requeue(_ context.Context, msg events.SQSMessage, delay time.Duration) error {
	if r.err != nil {
		return r.err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent, r.delays = append(r.sent, msg), append(r.delays, delay)
	return nil
}

// lastReceive runs m, on its last receive (3 of 3), against a key held for
// a minute, with WithRequeue(r); the invocation has 10 s.
func lastReceive(t *testing.T, r *requeues, m events.SQSMessage) (events.SQSEventResponse, []sqsbatch.RecordResult) {
	t.Helper()
	return lastReceiveLogged(t, r, m, quiet)
}

func lastReceiveLogged(t *testing.T, r *requeues, m events.SQSMessage, log *slog.Logger) (events.SQSEventResponse, []sqsbatch.RecordResult) {
	t.Helper()
	store := idemtest.NewMemoryStore()
	holdKey(t, store, "order-1", time.Minute)
	var mu sync.Mutex
	var results []sqsbatch.RecordResult
	h, err := sqsbatch.New(newGuard(t, store), sqsbatch.Attribute("id"), nop,
		sqsbatch.WithLogger(log), sqsbatch.WithMaxReceiveCount(3), sqsbatch.WithRequeue(r),
		sqsbatch.WithRecordHook(func(_ context.Context, rr sqsbatch.RecordResult) {
			mu.Lock()
			defer mu.Unlock()
			results = append(results, rr)
		}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m.Attributes = map[string]string{"ApproximateReceiveCount": "3", "MessageGroupId": m.Attributes["MessageGroupId"]}
	resp, err := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{m}})
	if err != nil {
		t.Fatal(err)
	}
	return resp, results
}

// TestLastReceiveRequeuesWhenItCannotWait: a copy on its last receive whose
// holder's lease ends after the invocation is sent to its queue again,
// delayed until that lease ends, with its body and attributes, and its
// message is deleted (not failed into the DLQ).
func TestLastReceiveRequeuesWhenItCannotWait(t *testing.T) {
	var r requeues
	var logs bytes.Buffer
	resp, results := lastReceiveLogged(t, &r, msg("m1", "order-1", "the body"), slog.New(slog.NewTextHandler(&logs, nil)))
	if len(resp.BatchItemFailures) != 0 || len(r.sent) != 1 {
		t.Fatalf("failures %v, requeued %d; want the copy requeued and its message deleted", failures(resp), len(r.sent))
	}
	sent := r.sent[0]
	if sent.Body != "the body" || *sent.MessageAttributes["id"].StringValue != "order-1" {
		t.Errorf("requeued %+v, want the message's body and attributes", sent)
	}
	if a := sent.MessageAttributes[sqsbatch.RequeuesAttribute]; a.DataType != "Number" || *a.StringValue != "1" {
		t.Errorf("%s = %+v, want Number 1", sqsbatch.RequeuesAttribute, a)
	}
	if d := r.delays[0]; d < 59*time.Second || d > 62*time.Second {
		t.Errorf("delay %s, want the holder's lease end (a minute) and a second", d)
	}
	if len(results) != 1 || !results[0].Requeued || results[0].Failed || results[0].Outcome != idem.InProgress {
		t.Errorf("record result %+v, want Requeued, not Failed, outcome InProgress", results)
	}
	if !strings.Contains(logs.String(), `level=INFO msg="record requeued" message_id=m1 outcome=requeued`) {
		t.Errorf("log %q, want one INFO line: record requeued", logs.String())
	}
}

// TestNotRequeued: when the copy cannot be requeued, it fails as it would
// without WithRequeue, and nothing is lost.
func TestNotRequeued(t *testing.T) {
	tenAttributes := msg("m1", "order-1", "b")
	for i := range 9 {
		v := fmt.Sprint(i)
		tenAttributes.MessageAttributes[fmt.Sprint("a", i)] = events.SQSMessageAttribute{DataType: "String", StringValue: &v}
	}
	requeuedThrice := msg("m1", "order-1", "b")
	three := "3"
	requeuedThrice.MessageAttributes[sqsbatch.RequeuesAttribute] = events.SQSMessageAttribute{DataType: "Number", StringValue: &three}
	for _, tc := range []struct {
		name string
		err  error
		msg  events.SQSMessage
	}{
		{"send fails", errors.New("AccessDenied"), msg("m1", "order-1", "b")},
		{"FIFO queue", nil, fifo("m1", "g", "order-1")},
		{"requeued three times already", nil, requeuedThrice},
		{"no room for the counter attribute", nil, tenAttributes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := requeues{err: tc.err}
			resp, results := lastReceive(t, &r, tc.msg)
			if len(resp.BatchItemFailures) != 1 || len(r.sent) != 0 {
				t.Fatalf("failures %v, requeued %d; want the record failed, nothing sent", failures(resp), len(r.sent))
			}
			if len(results) != 1 || results[0].Requeued {
				t.Errorf("record result %+v, want not Requeued", results)
			}
		})
	}
}

// TestRequeueOnlyOnTheLastReceive: an earlier receive comes back by the
// visibility timeout, as before; it is not requeued.
func TestRequeueOnlyOnTheLastReceive(t *testing.T) {
	store := idemtest.NewMemoryStore()
	holdKey(t, store, "order-1", time.Minute)
	var r requeues
	h, err := sqsbatch.New(newGuard(t, store), sqsbatch.Attribute("id"), nop,
		sqsbatch.WithLogger(quiet), sqsbatch.WithMaxReceiveCount(3), sqsbatch.WithRequeue(&r))
	if err != nil {
		t.Fatal(err)
	}
	resp, _ := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{received(msg("m1", "order-1", "b"), 2)}})
	if len(resp.BatchItemFailures) != 1 || len(r.sent) != 0 {
		t.Fatalf("failures %v, requeued %d; want it failed, not requeued", failures(resp), len(r.sent))
	}
}

// TestRequeuedCopyRunsWhenTheHolderFails: the requeued copy is a message
// like any: when the holder fails, it runs the effect; nothing is lost.
func TestRequeuedCopyRunsWhenTheHolderFails(t *testing.T) {
	store := idemtest.NewMemoryStore()
	holdKey(t, store, "order-1", 600*time.Millisecond) // fails at its lease end
	var r requeues
	ran := 0
	g, err := idem.New(store, "test", idem.WithSafetyMargin(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	h, err := sqsbatch.New(g, sqsbatch.Attribute("id"),
		func(context.Context, string, events.SQSMessage) ([]byte, error) { ran++; return nil, nil },
		sqsbatch.WithLogger(quiet), sqsbatch.WithMaxReceiveCount(1), sqsbatch.WithRequeue(&r))
	if err != nil {
		t.Fatal(err)
	}
	// An invocation too short to wait for the holder: the copy is requeued.
	short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	resp, _ := h.Handle(short, events.SQSEvent{Records: []events.SQSMessage{received(msg("m1", "order-1", "b"), 1)}})
	if len(resp.BatchItemFailures) != 0 || len(r.sent) != 1 {
		t.Fatalf("failures %v, requeued %d; want it requeued", failures(resp), len(r.sent))
	}
	time.Sleep(r.delays[0]) // SQS delivers the copy after its delay
	copyMsg := r.sent[0]
	copyMsg.MessageId = "m2"
	copyMsg.Attributes = map[string]string{"ApproximateReceiveCount": "1"}
	ctx, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	resp, _ = h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{copyMsg}})
	if len(resp.BatchItemFailures) != 0 || ran != 1 {
		t.Fatalf("requeued copy: failures %v, effect ran %d times; want once", failures(resp), ran)
	}
}

func TestWithRequeueNil(t *testing.T) {
	_, err := sqsbatch.New(newGuard(t, idemtest.NewMemoryStore()), sqsbatch.MessageID, nop, sqsbatch.WithRequeue(nil))
	if !errors.Is(err, idem.ErrInvalid) {
		t.Fatalf("WithRequeue(nil): %v, want ErrInvalid", err)
	}
}

// TestRequeuedRatherThanRunOutOfTime: a holder whose lease ends shortly
// before the copy's deadline is not waited for — the copy would then have
// no time left for its own attempt and fail on its last receive — it is
// requeued at once.
func TestRequeuedRatherThanRunOutOfTime(t *testing.T) {
	store := idemtest.NewMemoryStore()
	holdKey(t, store, "order-1", time.Second)
	g, err := idem.New(store, "test", idem.WithSafetyMargin(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var r requeues
	h, err := sqsbatch.New(g, sqsbatch.Attribute("id"), nop,
		sqsbatch.WithLogger(quiet), sqsbatch.WithMaxReceiveCount(1), sqsbatch.WithRequeue(&r))
	if err != nil {
		t.Fatal(err)
	}
	// The holder's lease ends in 1 s: 1 s of slack and 2 s for an attempt
	// would end after this invocation's 3.5 s.
	ctx, cancel := context.WithTimeout(context.Background(), 3500*time.Millisecond)
	defer cancel()
	start := time.Now()
	resp, _ := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{received(msg("m1", "order-1", "b"), 1)}})
	if len(resp.BatchItemFailures) != 0 || len(r.sent) != 1 || time.Since(start) > time.Second {
		t.Fatalf("failures %v, requeued %d after %s; want it requeued at once", failures(resp), len(r.sent), time.Since(start))
	}
}

// TestInvalidRequeueCount: a requeue count the producer set out of
// [0, MaxRequeues], or that is no decimal Number, cannot widen the bound: it
// counts as the limit reached, and the message is not requeued.
func TestInvalidRequeueCount(t *testing.T) {
	for _, tc := range []struct{ name, dataType, value string }{
		{"negative", "Number", "-999"},
		{"garbage", "Number", "many"},
		{"huge", "Number", "99999999999999999999"},
		{"huge negative", "Number", "-99999999999999999999"},
		{"over the limit", "Number", "4"},
		{"fraction", "Number", "0.5"},
		{"not a Number", "String", "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := msg("m1", "order-1", "b")
			v := tc.value
			m.MessageAttributes[sqsbatch.RequeuesAttribute] = events.SQSMessageAttribute{DataType: tc.dataType, StringValue: &v}
			var r requeues
			var logs bytes.Buffer
			resp, _ := lastReceiveLogged(t, &r, m, slog.New(slog.NewTextHandler(&logs, nil)))
			if len(resp.BatchItemFailures) != 1 || len(r.sent) != 0 {
				t.Fatalf("failures %v, requeued %v; want the record failed, nothing sent", failures(resp), r.sent)
			}
			if !strings.Contains(logs.String(), `msg="record not requeued" message_id=m1 reason="invalid requeue count`) {
				t.Fatalf("log %q, want the reason: invalid requeue count", logs.String())
			}
		})
	}
}
