package idemtest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// The subtests of transactional mode, run for stores that declare
// Capabilities.Transactions.

func (s *suite) txStore(t *testing.T, store idem.Store) idem.TxStore {
	ts, ok := store.(idem.TxStore)
	if !ok {
		t.Fatalf("%T declares Transactions but is not an idem.TxStore", store)
	}
	return ts
}

// txEffect returns a TxFunc incrementing counter id (when the suite has a
// counter) and returning result.
func (s *suite) txEffect(id, result string) idem.TxFunc {
	return func(context.Context) (idem.TxEffect, error) {
		tx := idem.TxEffect{Result: []byte(result)}
		if s.write != nil {
			tx.Writes = []any{s.write(id)}
		}
		return tx, nil
	}
}

func (s *suite) checkCount(t *testing.T, id string, want int) {
	t.Helper()
	if s.count == nil {
		return
	}
	n, err := s.count(context.Background(), id)
	if err != nil {
		t.Fatalf("count %q: %v", id, err)
	}
	if n != want {
		t.Fatalf("counter %q = %d, want %d (writes applied %d times)", id, n, want, n)
	}
}

func (s *suite) txFirst(t *testing.T, store idem.Store) {
	s.txStore(t, store)
	g := newGuard(t, store)
	ctx := context.Background()
	key := unique("order")
	res, err := g.DoTx(ctx, key, []byte("p"), s.txEffect(key, "card-1"))
	if err != nil || res.Outcome != idem.Executed || string(res.Value) != "card-1" || res.Attempts != 1 {
		t.Fatalf("first DoTx: %+v, %v", res, err)
	}
	res, err = g.DoTx(ctx, key, []byte("p"), s.txEffect(key, "card-2"))
	if err != nil || res.Outcome != idem.Duplicate || string(res.Value) != "card-1" {
		t.Fatalf("duplicate DoTx: %+v, %v; want Duplicate replaying card-1", res, err)
	}
	// A lease-mode Do sees the transactional receipt as well.
	if res, err := g.Do(ctx, key, []byte("p"), value("x")); err != nil || res.Outcome != idem.Duplicate {
		t.Fatalf("Do after DoTx: %+v, %v", res, err)
	}
	s.checkCount(t, key, 1)
}

func (s *suite) txConcurrent(t *testing.T, store idem.Store) {
	s.txStore(t, store)
	g := newGuard(t, store)
	key := unique("order")
	var wg sync.WaitGroup
	var executed, duplicate, inProgress atomic.Int32
	start := make(chan struct{})
	for range 16 {
		wg.Go(func() {
			<-start
			res, err := g.DoTx(context.Background(), key, []byte("p"), s.txEffect(key, "card"))
			switch {
			case res.Outcome == idem.Executed:
				executed.Add(1)
			case res.Outcome == idem.Duplicate:
				duplicate.Add(1)
			case errors.Is(err, idem.ErrInProgress):
				inProgress.Add(1)
			default:
				t.Errorf("DoTx: %+v, %v", res, err)
			}
		})
	}
	close(start)
	wg.Wait()
	if executed.Load() != 1 {
		t.Fatalf("executed %d, duplicate %d, in progress %d: want exactly one executed", executed.Load(), duplicate.Load(), inProgress.Load())
	}
	s.checkCount(t, key, 1)
}

func (s *suite) txMismatch(t *testing.T, store idem.Store) {
	s.txStore(t, store)
	g := newGuard(t, store)
	ctx := context.Background()
	key := unique("order")
	if _, err := g.DoTx(ctx, key, []byte("a"), s.txEffect(key, "r")); err != nil {
		t.Fatal(err)
	}
	res, err := g.DoTx(ctx, key, []byte("b"), s.txEffect(key, "r"))
	if !errors.Is(err, idem.ErrPayloadMismatch) || res.Outcome != idem.Mismatch {
		t.Fatalf("tx mismatch: %+v, %v", res, err)
	}
	s.checkCount(t, key, 1)
}

func (s *suite) txAfterFailed(t *testing.T, store idem.Store) {
	s.txStore(t, store)
	g := newGuard(t, store)
	ctx := context.Background()
	key := unique("order")
	if _, err := g.Do(ctx, key, []byte("p"), func(context.Context) ([]byte, error) { return nil, errors.New("no") }); err == nil {
		t.Fatal("want the failing effect's error")
	}
	res, err := g.DoTx(ctx, key, []byte("p"), s.txEffect(key, "r"))
	if err != nil || res.Outcome != idem.Executed || res.Attempts != 2 {
		t.Fatalf("DoTx over a FAILED record: %+v, %v; want Executed on attempt 2", res, err)
	}
	s.checkCount(t, key, 1)
}

func (s *suite) txInProgress(t *testing.T, store idem.Store) {
	s.txStore(t, store)
	g := newGuard(t, store)
	ctx := context.Background()
	key := unique("order")
	_, err := g.Do(ctx, key, []byte("p"), func(context.Context) ([]byte, error) {
		res, err := g.DoTx(ctx, key, []byte("p"), s.txEffect(key, "r"))
		if !errors.Is(err, idem.ErrInProgress) || res.Outcome != idem.InProgress {
			t.Errorf("DoTx during a live lease: %+v, %v; want ErrInProgress", res, err)
		}
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s.checkCount(t, key, 0)
}

// txRetried: a commit whose response was lost and that is sent again (the
// SDK retries) must recognise its own receipt, not report a duplicate.
func (s *suite) txRetried(t *testing.T, store idem.Store) {
	ts := s.txStore(t, store)
	ctx := context.Background()
	now := time.Now()
	tx := idem.Transaction{Key: unique("ns") + "#k", Token: "commit-1", ExpiresAt: now.Add(time.Hour), Now: now, Result: []byte("r")}
	if _, ok, err := ts.Commit(ctx, tx); err != nil || !ok {
		t.Fatalf("first commit: %v, %v", ok, err)
	}
	rec, ok, err := ts.Commit(ctx, tx)
	if err != nil || !ok || rec.Status != idem.StatusCompleted {
		t.Fatalf("the same commit again: %+v, committed %v, %v; want its own receipt, committed", rec, ok, err)
	}
	tx.Token = "commit-2"
	if _, ok, err := ts.Commit(ctx, tx); err != nil || ok {
		t.Fatalf("another commit of the key: committed %v, %v; want a duplicate", ok, err)
	}
}
