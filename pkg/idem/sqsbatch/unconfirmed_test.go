package sqsbatch_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// throttledReceipts retries every Complete until its context ends, as
// dynamostore does with a table that throttles every request.
type throttledReceipts struct{ *idemtest.MemoryStore }

func (throttledReceipts) Complete(ctx context.Context, _, _ string, _ idem.Completion) error {
	<-ctx.Done()
	return errors.Join(errors.New("ThrottlingException"), ctx.Err())
}

// TestCopyAfterUnconfirmedDoesNotRunAgain: two copies of one key in one
// batch; the first runs the effect and cannot write its receipt
// (Unconfirmed). The second must not take the lapsed lease and run the
// effect a second time inside the same invocation.
func TestCopyAfterUnconfirmedDoesNotRunAgain(t *testing.T) {
	g, err := idem.New(throttledReceipts{idemtest.NewMemoryStore()}, "test",
		idem.WithLease(200*time.Millisecond), idem.WithSafetyMargin(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int32
	var rec recorder
	h, err := sqsbatch.New(g, sqsbatch.Attribute("id"),
		func(context.Context, string, events.SQSMessage) ([]byte, error) { ran.Add(1); return nil, nil },
		sqsbatch.WithLogger(quiet), sqsbatch.WithRecordHook(rec.hook))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	resp, err := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{msg("m1", "order-1", "b"), msg("m2", "order-1", "b")}})
	if ran.Load() != 1 {
		t.Fatalf("effect ran %d times for one key in one batch, want 1", ran.Load())
	}
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %v, %v; want both copies done (the effect ran)", failures(resp), err)
	}
	for _, id := range []string{"m1", "m2"} {
		if o := rec.records[id].Outcome; o != idem.Unconfirmed {
			t.Errorf("%s: %v, want unconfirmed", id, o)
		}
	}
}
