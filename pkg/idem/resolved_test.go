package idem_test

import (
	"context"
	"testing"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

// resolvedStore is a memory store whose receipts read as an operator's
// (idemctl resolve --done): no result, Resolved, as dynamostore and
// redisstore decode them.
type resolvedStore struct{ *idemtest.MemoryStore }

func (s resolvedStore) Acquire(ctx context.Context, a idem.Acquisition) (idem.Record, bool, error) {
	rec, ok, err := s.MemoryStore.Acquire(ctx, a)
	if !ok && rec.Status == idem.StatusCompleted {
		rec.Result, rec.ResultOmitted, rec.Resolved = nil, true, true
	}
	return rec, ok, err
}

// TestDuplicateOfResolvedReceipt: a copy that meets a receipt an operator
// wrote is a Duplicate that says so — not an effect that returned nothing
// — from the store and from the cache alike.
func TestDuplicateOfResolvedReceipt(t *testing.T) {
	for _, cache := range []bool{false, true} {
		var opts []idem.Option
		if cache {
			opts = append(opts, idem.WithCache(8))
		}
		store := resolvedStore{idemtest.NewMemoryStore()}
		writer, err := idem.New(store, "ns")
		if err != nil {
			t.Fatal(err)
		}
		g, err := idem.New(store, "ns", opts...)
		if err != nil {
			t.Fatal(err)
		}
		effect := func(context.Context) ([]byte, error) { return []byte("ran"), nil }
		// Another Guard writes an ordinary receipt, which the store then
		// reads back as resolved.
		if res, err := writer.Do(t.Context(), "k", nil, effect); err != nil || res.Outcome != idem.Executed || res.Resolved {
			t.Fatalf("cache %v: first call: %+v, %v", cache, res, err)
		}
		res, err := g.Do(t.Context(), "k", nil, effect)
		if err != nil || res.Outcome != idem.Duplicate || !res.Resolved || !res.ResultOmitted || res.Value != nil {
			t.Fatalf("cache %v: duplicate of a resolved receipt: %+v, %v; want Duplicate, Resolved, ResultOmitted", cache, res, err)
		}
		if !cache {
			continue
		}
		res, err = g.Do(t.Context(), "k", nil, effect)
		if err != nil || res.Outcome != idem.Duplicate || !res.Cached || !res.Resolved {
			t.Fatalf("cached duplicate of a resolved receipt: %+v, %v; want Cached and Resolved", res, err)
		}
	}
}
