package sqsbatch_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// deletes records the messages deleted at once, or fails with err.
type deletes struct {
	err error

	mu  sync.Mutex
	ids []string
}

func (d *deletes) Delete(_ context.Context, msg events.SQSMessage) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ids = append(d.ids, msg.MessageId)
	return d.err
}

// TestDoneOnItsLastReceiveIsDeletedAtOnce: a record done on its last
// receive has its message deleted as soon as it is done, so that an
// invocation that dies afterwards (another record crashing it) does not send
// it to the dead-letter queue; failed records, and records with receives
// left, are left to the batch response.
func TestDoneOnItsLastReceiveIsDeletedAtOnce(t *testing.T) {
	store := idemtest.NewMemoryStore()
	errBoom := errors.New("boom")
	var d deletes
	h, err := sqsbatch.New(newGuard(t, store), sqsbatch.Attribute("id"),
		func(_ context.Context, key string, _ events.SQSMessage) ([]byte, error) {
			if key == "bad" {
				return nil, errBoom
			}
			return nil, nil
		},
		sqsbatch.WithLogger(quiet), sqsbatch.WithMaxReceiveCount(3), sqsbatch.WithDelete(&d))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{received(msg("m0", "dup", "b"), 1)}}); err != nil {
		t.Fatal(err)
	}
	resp, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		received(msg("executed-last", "a", "b"), 3),
		received(msg("duplicate-last", "dup", "b"), 4), // past the count: SQS's count is approximate
		received(msg("executed-early", "c", "b"), 2),
		received(msg("failed-last", "bad", "b"), 3),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := failures(resp); !slices.Equal(got, []string{"failed-last"}) {
		t.Errorf("failures %v, want [failed-last]", got)
	}
	slices.Sort(d.ids)
	if want := []string{"duplicate-last", "executed-last"}; !slices.Equal(d.ids, want) {
		t.Errorf("deleted at once %v, want %v", d.ids, want)
	}
}

// TestDeleteFailureLeavesTheResponse: a delete that fails changes nothing:
// the record is still reported done, for the mapping to delete.
func TestDeleteFailureLeavesTheResponse(t *testing.T) {
	d := deletes{err: errors.New("AccessDenied")}
	h, err := sqsbatch.New(newGuard(t, idemtest.NewMemoryStore()), sqsbatch.Attribute("id"), nop,
		sqsbatch.WithLogger(quiet), sqsbatch.WithMaxReceiveCount(1), sqsbatch.WithDelete(&d))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{received(msg("m1", "k", "b"), 1)}})
	if err != nil || len(resp.BatchItemFailures) != 0 || len(d.ids) != 1 {
		t.Fatalf("failures %v, %v, delete tried %d; want done, one delete tried", failures(resp), err, len(d.ids))
	}
}

// TestRequeuedIsDeletedAtOnce: the original of a requeued copy is done on
// its last receive: deleted at once too (its copy is on its way).
func TestRequeuedIsDeletedAtOnce(t *testing.T) {
	store := idemtest.NewMemoryStore()
	holdKey(t, store, "order-1", time.Minute)
	var r requeues
	var d deletes
	h, err := sqsbatch.New(newGuard(t, store), sqsbatch.Attribute("id"), nop,
		sqsbatch.WithLogger(quiet), sqsbatch.WithMaxReceiveCount(2), sqsbatch.WithRequeue(&r), sqsbatch.WithDelete(&d))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, _ := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{received(msg("m1", "order-1", "b"), 2)}})
	if len(resp.BatchItemFailures) != 0 || len(r.sent) != 1 || !slices.Equal(d.ids, []string{"m1"}) {
		t.Fatalf("failures %v, requeued %d, deleted %v; want requeued and deleted", failures(resp), len(r.sent), d.ids)
	}
}

func TestWithDeleteNil(t *testing.T) {
	_, err := sqsbatch.New(newGuard(t, idemtest.NewMemoryStore()), sqsbatch.MessageID, nop, sqsbatch.WithDelete(nil))
	if !errors.Is(err, idem.ErrInvalid) {
		t.Fatalf("WithDelete(nil): %v, want ErrInvalid", err)
	}
}
