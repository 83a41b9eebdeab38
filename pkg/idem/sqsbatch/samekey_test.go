package sqsbatch_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// started is a Tracer that closes all once n records have begun.
type started struct {
	n    atomic.Int32
	want int32
	all  chan struct{}
}

func newStarted(n int) *started { return &started{want: int32(n), all: make(chan struct{})} }

func (s *started) Batch(ctx context.Context, _ events.SQSEvent) (context.Context, func(events.SQSEventResponse, error)) {
	return ctx, func(events.SQSEventResponse, error) {}
}

func (s *started) Record(ctx context.Context, _ events.SQSMessage) (context.Context, func(sqsbatch.RecordResult)) {
	if s.n.Add(1) == s.want {
		close(s.all)
	}
	return ctx, func(sqsbatch.RecordResult) {}
}

// handleWithin runs ev in an invocation of 5 s and fails the test if Handle
// does not return within 10 s.
func handleWithin(t *testing.T, h *sqsbatch.Handler, ev events.SQSEvent) events.SQSEventResponse {
	t.Helper()
	type handled struct {
		resp events.SQSEventResponse
		err  error
	}
	done := make(chan handled, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go func() {
		resp, err := h.Handle(ctx, ev)
		done <- handled{resp, err}
	}()
	select {
	case d := <-done:
		if d.err != nil {
			t.Fatal(d.err)
		}
		return d.resp
	case <-time.After(10 * time.Second):
		t.Fatal("Handle did not return within 10 s: deadlock?")
		return events.SQSEventResponse{}
	}
}

// TestSameKeyInTwoFIFOGroups: copies of one key in two message groups of
// one batch run one after the other, so the second is a Duplicate, not an
// InProgress that fails (into the DLQ on its last receive).
func TestSameKeyInTwoFIFOGroups(t *testing.T) {
	tr := newStarted(2)
	var ran atomic.Int32
	var rec recorder
	h, err := sqsbatch.New(newGuard(t, idemtest.NewMemoryStore()), sqsbatch.Attribute("id"),
		func(context.Context, string, events.SQSMessage) ([]byte, error) {
			ran.Add(1)
			select { // both records have begun: the other one is waiting, or meets this lease
			case <-tr.all:
			case <-time.After(5 * time.Second):
			}
			return nil, nil
		}, sqsbatch.WithLogger(quiet), sqsbatch.WithConcurrency(2), sqsbatch.WithTracer(tr),
		sqsbatch.WithMaxReceiveCount(1), sqsbatch.WithRecordHook(rec.hook))
	if err != nil {
		t.Fatal(err)
	}
	a, b := received(fifo("a", "A", "order-1"), 1), received(fifo("b", "B", "order-1"), 1)
	a.Attributes["MessageGroupId"], b.Attributes["MessageGroupId"] = "A", "B"
	resp := handleWithin(t, h, events.SQSEvent{Records: []events.SQSMessage{a, b}})
	if len(resp.BatchItemFailures) != 0 || ran.Load() != 1 {
		t.Fatalf("failures %v, effect ran %d times; want none, once", failures(resp), ran.Load())
	}
	outcomes := []idem.Outcome{rec.records["a"].Outcome, rec.records["b"].Outcome}
	if !(outcomes[0] == idem.Executed && outcomes[1] == idem.Duplicate || outcomes[0] == idem.Duplicate && outcomes[1] == idem.Executed) {
		t.Fatalf("outcomes %v, want one executed, one duplicate", outcomes)
	}
}

// TestSameKeysCrossedInFIFOGroups: groups [k1, k2] and [k2, k1] run
// without a deadlock, each group in order, each key once.
func TestSameKeysCrossedInFIFOGroups(t *testing.T) {
	for range 20 { // a fresh store each round: every key runs again
		var mu sync.Mutex
		order := map[string][]string{} // group → keys in the order they ran
		var ran atomic.Int32
		h, err := sqsbatch.New(newGuard(t, idemtest.NewMemoryStore()), sqsbatch.Attribute("id"),
			func(context.Context, string, events.SQSMessage) ([]byte, error) {
				ran.Add(1)
				time.Sleep(5 * time.Millisecond) // let the groups overlap
				return nil, nil
			}, sqsbatch.WithLogger(quiet), sqsbatch.WithConcurrency(2),
			sqsbatch.WithRecordHook(func(_ context.Context, r sqsbatch.RecordResult) {
				mu.Lock()
				defer mu.Unlock()
				order[r.MessageID[:1]] = append(order[r.MessageID[:1]], r.Key)
			}))
		if err != nil {
			t.Fatal(err)
		}
		resp := handleWithin(t, h, events.SQSEvent{Records: []events.SQSMessage{
			fifo("A1", "A", "k1"), fifo("B1", "B", "k2"), fifo("A2", "A", "k2"), fifo("B2", "B", "k1"),
		}})
		if len(resp.BatchItemFailures) != 0 || ran.Load() != 2 {
			t.Fatalf("failures %v, effect ran %d times; want none, once per key", failures(resp), ran.Load())
		}
		if !equal(order["A"], []string{"k1", "k2"}) || !equal(order["B"], []string{"k2", "k1"}) {
			t.Fatalf("groups ran %v, want A [k1 k2], B [k2 k1]", order)
		}
	}
}

// TestLastReceiveRunsAfterAFailedCopy: on a standard queue, a copy on its
// last receive is not skipped after a batch-mate of its key failed: it runs
// (and here succeeds), rather than going to the DLQ unrun.
func TestLastReceiveRunsAfterAFailedCopy(t *testing.T) {
	t.Run("effect failed", func(t *testing.T) {
		var ran atomic.Int32
		var rec recorder
		h, err := sqsbatch.New(newGuard(t, idemtest.NewMemoryStore()), sqsbatch.Attribute("id"),
			func(context.Context, string, events.SQSMessage) ([]byte, error) {
				if ran.Add(1) == 1 {
					return nil, errors.New("boom")
				}
				return nil, nil
			}, sqsbatch.WithLogger(quiet), sqsbatch.WithMaxReceiveCount(3), sqsbatch.WithRecordHook(rec.hook))
		if err != nil {
			t.Fatal(err)
		}
		resp := handleWithin(t, h, events.SQSEvent{Records: []events.SQSMessage{
			received(msg("first", "order-1", "b"), 1), received(msg("last", "order-1", "b"), 3),
		}})
		// "boom" is not definite: the last copy runs again over an unknown
		// outcome (Rerun).
		if !equal(failures(resp), []string{"first"}) || ran.Load() != 2 || rec.records["last"].Outcome != idem.Rerun {
			t.Fatalf("failures %v, effect ran %d, last %+v; want only first failed, last run again (rerun)", failures(resp), ran.Load(), rec.records["last"])
		}
	})
	t.Run("held elsewhere", func(t *testing.T) {
		store := idemtest.NewMemoryStore()
		holdKey(t, store, "order-1", 400*time.Millisecond)
		var ran atomic.Int32
		h, err := sqsbatch.New(newGuard(t, store), sqsbatch.Attribute("id"),
			func(context.Context, string, events.SQSMessage) ([]byte, error) { ran.Add(1); return nil, nil },
			sqsbatch.WithLogger(quiet), sqsbatch.WithMaxReceiveCount(3))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{
			received(msg("first", "order-1", "b"), 1), received(msg("last", "order-1", "b"), 3),
		}})
		if err != nil || !equal(failures(resp), []string{"first"}) || ran.Load() != 1 {
			t.Fatalf("failures %v, %v, effect ran %d; want only first failed, last done after waiting", failures(resp), err, ran.Load())
		}
	})
}
