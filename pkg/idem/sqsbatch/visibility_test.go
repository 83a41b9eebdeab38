package sqsbatch_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// visibilities records the visibility changes asked for.
type visibilities struct {
	mu  sync.Mutex
	got map[string]time.Duration
}

func (v *visibilities) ChangeVisibility(_ context.Context, msg events.SQSMessage, timeout time.Duration) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.got == nil {
		v.got = map[string]time.Duration{}
	}
	v.got[msg.MessageId] = timeout
	return nil
}

func received(m events.SQSMessage, n int) events.SQSMessage {
	m.Attributes = map[string]string{"ApproximateReceiveCount": strconv.Itoa(n)}
	return m
}

// holdKey takes key's lease in another process for lease and returns.
func holdKey(t *testing.T, store idem.Store, key string, lease time.Duration) {
	t.Helper()
	holder, err := idem.New(store, "test", idem.WithLease(lease), idem.WithSafetyMargin(lease/2))
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	go func() {
		_, _ = holder.Do(context.Background(), key, nil, func(ctx context.Context) ([]byte, error) {
			close(started)
			<-ctx.Done() // a slow effect, until its context ends
			return nil, errors.New("too slow")
		})
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the holder did not start its effect within 10 s")
	}
}

// TestInProgressComesBackWhenTheLeaseEnds: a copy meeting a live lease is
// made visible again when that lease ends, not after the queue's
// visibility timeout.
func TestInProgressComesBackWhenTheLeaseEnds(t *testing.T) {
	store := idemtest.NewMemoryStore()
	holdKey(t, store, "order-1", 5*time.Second)
	var vis visibilities
	h, err := sqsbatch.New(newGuard(t, store), sqsbatch.Attribute("id"), nop,
		sqsbatch.WithLogger(quiet), sqsbatch.WithVisibility(&vis))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{received(msg("m1", "order-1", "b"), 1)}})
	if err != nil || len(resp.BatchItemFailures) != 1 {
		t.Fatalf("copy of a held key: %v, %v; want it failed", failures(resp), err)
	}
	// The lease ends in about 5 s: back after 6 s (rounded up, a second of slack).
	if got := vis.got["m1"]; got < 5*time.Second || got > 7*time.Second {
		t.Fatalf("visibility %s, want the lease's end and a second", got)
	}
}

// TestLastReceiveWaitsForTheHolder: on its last receive, a copy meeting a
// live lease waits for the holder within the invocation instead of failing
// into the dead-letter queue; the holder failed, so the copy runs.
func TestLastReceiveWaitsForTheHolder(t *testing.T) {
	store := idemtest.NewMemoryStore()
	holdKey(t, store, "order-1", 400*time.Millisecond)
	ran := 0
	h, err := sqsbatch.New(newGuard(t, store), sqsbatch.Attribute("id"),
		func(context.Context, string, events.SQSMessage) ([]byte, error) { ran++; return nil, nil },
		sqsbatch.WithLogger(quiet), sqsbatch.WithMaxReceiveCount(3))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev := events.SQSEvent{Records: []events.SQSMessage{received(msg("m1", "order-1", "b"), 3)}}
	resp, err := h.Handle(ctx, ev)
	if err != nil || len(resp.BatchItemFailures) != 0 || ran != 1 {
		t.Fatalf("last receive of a held key: %v, %v, ran %d; want it done after waiting", failures(resp), err, ran)
	}
}

// TestLastReceiveDoesNotWaitPastTheDeadline: a holder whose lease ends
// after the invocation is not waited for.
func TestLastReceiveDoesNotWaitPastTheDeadline(t *testing.T) {
	store := idemtest.NewMemoryStore()
	holdKey(t, store, "order-1", time.Minute)
	h, err := sqsbatch.New(newGuard(t, store), sqsbatch.Attribute("id"), nop,
		sqsbatch.WithLogger(quiet), sqsbatch.WithMaxReceiveCount(3))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	resp, _ := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{received(msg("m1", "order-1", "b"), 3)}})
	if len(resp.BatchItemFailures) != 1 || time.Since(start) > 5*time.Second {
		t.Fatalf("failures %v after %s; want a failure at once", failures(resp), time.Since(start))
	}
}

// TestResponseBeforeTheDeadline: a receipt retried until the deadline still
// leaves time to return the batch response.
func TestResponseBeforeTheDeadline(t *testing.T) {
	g, err := idem.New(throttledReceipts{idemtest.NewMemoryStore()}, "test", idem.WithSafetyMargin(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	h, err := sqsbatch.New(g, sqsbatch.Attribute("id"), nop, sqsbatch.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	deadline, _ := ctx.Deadline()
	if _, err := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{msg("m1", "k", "b")}}); err != nil {
		t.Fatal(err)
	}
	if left := time.Until(deadline); left < 50*time.Millisecond {
		t.Fatalf("Handle returned %s before the deadline, want about 100 ms", left)
	}
}

func TestNewTxNeedsATransactionalGuard(t *testing.T) {
	g := newGuard(t, struct{ idem.Store }{idemtest.NewMemoryStore()}) // no Commit
	_, err := sqsbatch.NewTx(g, sqsbatch.MessageID, func(context.Context, string, events.SQSMessage) (idem.TxEffect, error) {
		return idem.TxEffect{}, nil
	})
	if !errors.Is(err, idem.ErrInvalid) || !errors.Is(err, idem.ErrNotTransactional) {
		t.Fatalf("NewTx over a store without transactions: %v; want ErrInvalid, ErrNotTransactional", err)
	}
}
