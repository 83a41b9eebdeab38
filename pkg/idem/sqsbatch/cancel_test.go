package sqsbatch_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// TestCancelledBatchIsNotAStoreOutage: a batch whose context the caller
// cancelled fails its records, each with the cancellation, and is never
// reported as a store that is down (ErrStoreDown makes Lambda back off).
func TestCancelledBatchIsNotAStoreOutage(t *testing.T) {
	var rec recorder
	h, err := sqsbatch.New(newGuard(t, idemtest.NewMemoryStore()), sqsbatch.Attribute("id"),
		func(context.Context, string, events.SQSMessage) ([]byte, error) { return nil, nil },
		sqsbatch.WithLogger(quiet), sqsbatch.WithRecordHook(rec.hook))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	resp, err := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{msg("m1", "k1", "b"), msg("m2", "k2", "b")}})
	if errors.Is(err, sqsbatch.ErrStoreDown) || errors.Is(err, idem.ErrStore) {
		t.Fatalf("cancelled batch: %v; reported as a store outage", err)
	}
	if len(resp.BatchItemFailures) != 2 {
		t.Fatalf("cancelled batch: failures %v; want both records", failures(resp))
	}
	for id, r := range rec.records {
		if r.Outcome == idem.StoreError || !errors.Is(r.Err, context.Canceled) {
			t.Fatalf("%s: %+v; want the cancellation, not a store error", id, r)
		}
	}
}
