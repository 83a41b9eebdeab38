//go:build integration

package integration

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
)

// overclaiming declares room for 1 MiB results, as a store whose size
// computation is wrong would: DynamoDB then refuses the item.
type overclaiming struct{ *dynamostore.Store }

func (overclaiming) Capabilities() idem.Capabilities {
	return idem.Capabilities{Transactions: true, MaxResultSize: 1 << 20, MaxKeySize: idem.MaxStorageKeyLen}
}

// testResultRefused: a result DynamoDB refuses for its size never becomes a
// second effect: the receipt is written without it, in lease and in
// transactional mode. Before, the record stayed IN_PROGRESS and the effect
// ran again after every lease.
func testResultRefused(ctx context.Context, t *testing.T, store *dynamostore.Store, ledger string, count func(context.Context, string) (int, error)) {
	if _, err := idem.New(store, "big", idem.WithMaxResultSize(1<<20)); !errors.Is(err, idem.ErrInvalid) {
		t.Fatalf("WithMaxResultSize(1 MiB) on DynamoDB: %v, want ErrInvalid", err)
	}
	// The store itself recognises DynamoDB's refusal.
	big := bytes.Repeat([]byte("r"), 500<<10)
	now := time.Now()
	a := idem.Acquisition{Key: uniqueName("big") + "#k", Lease: "l", LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour), Now: now}
	if _, ok, err := store.Acquire(ctx, a); err != nil || !ok {
		t.Fatalf("Acquire: %v, %v", ok, err)
	}
	if err := store.Complete(ctx, a.Key, "l", idem.Completion{Result: big, ExpiresAt: a.ExpiresAt, Now: now}); !errors.Is(err, idem.ErrResultTooLarge) {
		t.Fatalf("Complete with 500 KB: %v, want ErrResultTooLarge", err)
	}
	tx := idem.Transaction{Key: uniqueName("big") + "#t", Token: "c", ExpiresAt: a.ExpiresAt, Now: now, Result: big}
	if _, _, err := store.Commit(ctx, tx); !errors.Is(err, idem.ErrResultTooLarge) {
		t.Fatalf("Commit with 500 KB: %v, want ErrResultTooLarge", err)
	}

	// Through a Guard that believed the store: one effect, a receipt.
	g, err := idem.New(overclaiming{store}, "big", idem.WithMaxResultSize(1<<20), idem.WithLease(5*time.Second), idem.WithSafetyMargin(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	key := uniqueName("order")
	runs := 0
	for range 3 {
		res, err := g.Do(ctx, key, nil, func(context.Context) ([]byte, error) { runs++; return big, nil })
		if err != nil || !res.ResultOmitted {
			t.Fatalf("Do: %+v, %v", res.Outcome, err)
		}
	}
	if runs != 1 {
		t.Fatalf("the effect ran %d times, want 1", runs)
	}
	tkey := uniqueName("order")
	for range 2 {
		res, err := g.DoTx(ctx, tkey, nil, func(context.Context) (idem.TxEffect, error) {
			return idem.TxEffect{Writes: []any{ledgerIncrement(ledger)(tkey)}, Result: big}, nil
		})
		if err != nil || !res.ResultOmitted {
			t.Fatalf("DoTx: %v, %v", res.Outcome, err)
		}
	}
	if n, err := count(ctx, tkey); err != nil || n != 1 {
		t.Fatalf("transactional writes applied %d times (%v), want 1", n, err)
	}
}
