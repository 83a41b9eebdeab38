package idemtest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// The subtests of a single key's life: first run, duplicates, concurrency,
// payload mismatch, expiry and attempts.

func (s *suite) firstRun(t *testing.T, store idem.Store) {
	g := newGuard(t, store)
	ctx := context.Background()
	key := unique("order")
	var ran bool
	res, err := g.Do(ctx, key, []byte("payload"), func(ctx context.Context) ([]byte, error) {
		ran = true
		l, ok := idem.LeaseFromContext(ctx)
		if !ok || l.Key != key || l.Attempt != 1 || l.Token == "" {
			t.Errorf("LeaseFromContext = %+v, %v", l, ok)
		}
		if _, ok := ctx.Deadline(); !ok {
			t.Error("effect context has no deadline")
		}
		return []byte("gift-card-1"), nil
	})
	if err != nil || !ran {
		t.Fatalf("Do: %v (ran %v)", err, ran)
	}
	mustOutcome(t, "first", res, err, idem.Executed)
	if string(res.Value) != "gift-card-1" || res.Attempts != 1 {
		t.Fatalf("result %+v", res)
	}
	if rec, ok := s.record(t, store, g.StorageKey(key)); ok {
		if rec.Status != idem.StatusCompleted || rec.Attempts != 1 || string(rec.Result) != "gift-card-1" {
			t.Fatalf("record %+v", rec)
		}
		if strings.Contains(rec.Key, key) {
			t.Fatalf("storage key %q holds the business key in clear", rec.Key)
		}
	}
}

func (s *suite) duplicate(t *testing.T, store idem.Store) {
	g := newGuard(t, store)
	ctx := context.Background()
	key := unique("order")
	if _, err := g.Do(ctx, key, []byte("p"), value("v1")); err != nil {
		t.Fatal(err)
	}
	calls := 0
	for range 3 {
		res, err := g.Do(ctx, key, []byte("p"), func(context.Context) ([]byte, error) {
			calls++
			return []byte("v2"), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		mustOutcome(t, "duplicate", res, err, idem.Duplicate)
		if string(res.Value) != "v1" || res.Attempts != 1 {
			t.Fatalf("duplicate replayed %+v", res)
		}
	}
	if calls != 0 {
		t.Fatalf("effect ran %d times on duplicates", calls)
	}
}

func (s *suite) concurrent(t *testing.T, store idem.Store) {
	g := newGuard(t, store)
	key := unique("order")
	var calls atomic.Int32
	var wg sync.WaitGroup
	outcomes := make(chan idem.Outcome, 16)
	start := make(chan struct{})
	for range 16 {
		wg.Go(func() {
			<-start
			res, err := g.Do(context.Background(), key, []byte("p"), func(context.Context) ([]byte, error) {
				calls.Add(1)
				time.Sleep(50 * time.Millisecond)
				return []byte("once"), nil
			})
			if err != nil && !errors.Is(err, idem.ErrInProgress) {
				t.Errorf("Do: %v", err)
			}
			outcomes <- res.Outcome
		})
	}
	close(start)
	wg.Wait()
	close(outcomes)
	count := map[idem.Outcome]int{}
	for o := range outcomes {
		count[o]++
	}
	if calls.Load() != 1 || count[idem.Executed] != 1 || count[idem.Executed]+count[idem.Duplicate]+count[idem.InProgress] != 16 {
		t.Fatalf("effect ran %d times; outcomes %v", calls.Load(), count)
	}
}

func (s *suite) inProgress(t *testing.T, store idem.Store) {
	g := newGuard(t, store)
	ctx := context.Background()
	key := unique("order")
	res, err := g.Do(ctx, key, []byte("p"), func(context.Context) ([]byte, error) {
		res, err := g.Do(ctx, key, []byte("p"), value("second"))
		if !errors.Is(err, idem.ErrInProgress) || res.Outcome != idem.InProgress {
			t.Errorf("second Do while the first runs: %+v, %v; want ErrInProgress", res, err)
		}
		return []byte("first"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	mustOutcome(t, "first", res, err, idem.Executed)
}

func (s *suite) mismatch(t *testing.T, store idem.Store) {
	g := newGuard(t, store)
	ctx := context.Background()
	key := unique("order")
	if _, err := g.Do(ctx, key, []byte(`{"amount":10}`), value("v")); err != nil {
		t.Fatal(err)
	}
	ran := false
	res, err := g.Do(ctx, key, []byte(`{"amount":99}`), func(context.Context) ([]byte, error) { ran = true; return nil, nil })
	if !errors.Is(err, idem.ErrPayloadMismatch) || res.Outcome != idem.Mismatch || ran {
		t.Fatalf("same key, other payload: %+v, %v (ran %v); want ErrPayloadMismatch", res, err, ran)
	}
	// A mismatch is reported while the first attempt runs, too.
	key2 := unique("order")
	_, err = g.Do(ctx, key2, []byte("a"), func(context.Context) ([]byte, error) {
		_, err := g.Do(ctx, key2, []byte("b"), value("x"))
		if !errors.Is(err, idem.ErrPayloadMismatch) {
			t.Errorf("mismatch while in progress: %v", err)
		}
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (s *suite) expired(t *testing.T, store idem.Store) {
	clock := NewClock(time.Now())
	g := newGuard(t, store, idem.WithClock(clock.Now), idem.WithRetention(time.Hour))
	ctx := context.Background()
	key := unique("order")
	if _, err := g.Do(ctx, key, []byte("p"), value("v1")); err != nil {
		t.Fatal(err)
	}
	clock.Advance(59 * time.Minute)
	if res, err := g.Do(ctx, key, []byte("p"), value("v2")); err != nil || res.Outcome != idem.Duplicate {
		t.Fatalf("within retention: %+v, %v; want Duplicate", res, err)
	}
	// TTL deletes lazily: the record may still be there, but counts as absent.
	clock.Advance(2 * time.Minute)
	res, err := g.Do(ctx, key, []byte("p"), value("v2"))
	if err != nil || res.Outcome != idem.Executed || string(res.Value) != "v2" {
		t.Fatalf("after retention: %+v, %v; want Executed", res, err)
	}
}

func (s *suite) attempts(t *testing.T, store idem.Store) {
	// Keep the error text: the subtest checks it is cut cleanly.
	g := newGuard(t, store, idem.WithErrorText(error.Error))
	ctx := context.Background()
	key := unique("order")
	for i := 1; i <= 2; i++ {
		long := strings.Repeat("é", idem.MaxLastErrorLen) // 2 bytes a rune: must be cut
		res, err := g.Do(ctx, key, []byte("p"), func(context.Context) ([]byte, error) {
			return nil, errors.New(long)
		})
		if res.Attempts != i || err == nil {
			t.Fatalf("failure %d: %+v, %v", i, res, err)
		}
		if rec, ok := s.record(t, store, g.StorageKey(key)); ok {
			if len(rec.LastError) > idem.MaxLastErrorLen || !strings.HasPrefix(long, rec.LastError) || rec.LastError == "" {
				t.Fatalf("lastError not truncated cleanly: %d bytes", len(rec.LastError))
			}
		}
	}
	res, err := g.Do(ctx, key, []byte("p"), value("ok"))
	if err != nil || res.Attempts != 3 {
		t.Fatalf("third attempt: %+v, %v", res, err)
	}
	if res, _ := g.Do(ctx, key, []byte("p"), value("x")); res.Outcome != idem.Duplicate || res.Attempts != 3 {
		t.Fatalf("duplicate after 3 attempts: %+v", res)
	}
}
