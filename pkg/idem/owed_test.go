package idem_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

// failingStore refuses every Complete at once while failing is set, as a
// store that is down answers: the receipt is owed (Unconfirmed).
type failingStore struct {
	*idemtest.MemoryStore
	mu      sync.Mutex
	failing bool
}

func (s *failingStore) setFailing(v bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failing = v
}

func (s *failingStore) Complete(ctx context.Context, key, lease string, c idem.Completion) error {
	s.mu.Lock()
	failing := s.failing
	s.mu.Unlock()
	if failing {
		return errors.New("ThrottlingException")
	}
	return s.MemoryStore.Complete(ctx, key, lease, c)
}

// TestEveryOwedReceiptIsKept: however many keys end Unconfirmed in one
// process, a later copy of each writes the owed receipt instead of running
// the effect again. (The Guard kept 128 in an LRU: the 129th key's copy
// ran its effect a second time, although nobody had taken its record over.)
func TestEveryOwedReceiptIsKept(t *testing.T) {
	store := &failingStore{MemoryStore: idemtest.NewMemoryStore(), failing: true}
	g := mustGuard(t, store)
	const keys = 1000
	runs := map[string]int{}
	effect := func(key string) idem.Func {
		return func(context.Context) ([]byte, error) { runs[key]++; return []byte("v-" + key), nil }
	}
	for i := range keys {
		key := fmt.Sprint("k", i)
		if res, err := g.Do(context.Background(), key, nil, effect(key)); res.Outcome != idem.Unconfirmed || !errors.Is(err, idem.ErrUnconfirmed) {
			t.Fatalf("%s while the store fails: %+v, %v; want Unconfirmed", key, res, err)
		}
	}
	store.setFailing(false)
	for i := range keys {
		key := fmt.Sprint("k", i)
		res, err := g.Do(context.Background(), key, nil, effect(key))
		if err != nil || res.Outcome != idem.Duplicate || runs[key] != 1 {
			t.Fatalf("copy of %s (owed receipt %d of %d): %+v, %v, runs %d; want Duplicate, 1 run", key, i+1, keys, res, err, runs[key])
		}
		if string(res.Value) != "v-"+key {
			t.Fatalf("copy of %s: value %q; want the effect's", key, res.Value)
		}
	}
}

// TestCancelledCallIsNotAStoreOutage: a caller that cancels its context
// gets its own cancellation back, never ErrStore or StoreError (which
// sqsbatch turns into a whole-batch ErrStoreDown), as an expired deadline
// is reported.
func TestCancelledCallIsNotAStoreOutage(t *testing.T) {
	for _, tx := range []bool{false, true} {
		t.Run(fmt.Sprint("tx=", tx), func(t *testing.T) {
			store := idemtest.NewMemoryStore()
			g := mustGuard(t, store)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			var res idem.Result
			var err error
			ran := false
			if tx {
				res, err = g.DoTx(ctx, "k", nil, func(context.Context) (idem.TxEffect, error) { ran = true; return idem.TxEffect{}, nil })
			} else {
				res, err = g.Do(ctx, "k", nil, func(context.Context) ([]byte, error) { ran = true; return nil, nil })
			}
			if errors.Is(err, idem.ErrStore) || res.Outcome == idem.StoreError {
				t.Fatalf("cancelled call: %+v, %v; reported as a store outage", res, err)
			}
			if !errors.Is(err, context.Canceled) || res.Outcome != idem.Failed || ran {
				t.Fatalf("cancelled call: %+v, %v, ran %v; want Failed wrapping context.Canceled, nothing run", res, err, ran)
			}
			if _, found, _ := store.Get(context.Background(), g.StorageKey("k")); found {
				t.Fatal("a cancelled call wrote a record")
			}
		})
	}
}

// cancellingStore cancels the caller's context while its Acquire is under
// way, and fails with the context's error, as an SDK does.
type cancellingStore struct {
	*idemtest.MemoryStore
	cancel context.CancelFunc
}

func (s *cancellingStore) Acquire(ctx context.Context, a idem.Acquisition) (idem.Record, bool, error) {
	s.cancel()
	<-ctx.Done()
	return idem.Record{}, false, fmt.Errorf("operation error DynamoDB: UpdateItem: %w", ctx.Err())
}

func TestCancelledDuringAcquireIsNotAStoreOutage(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := mustGuard(t, &cancellingStore{MemoryStore: idemtest.NewMemoryStore(), cancel: cancel})
	res, err := g.Do(ctx, "k", nil, ok("v"))
	if errors.Is(err, idem.ErrStore) || res.Outcome != idem.Failed || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled during the acquire: %+v, %v; want Failed wrapping context.Canceled, not ErrStore", res, err)
	}
}
