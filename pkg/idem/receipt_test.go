package idem_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

// downStore fails every Complete while down is set, the way a store that
// throttles every retry does: until the context ends.
type downStore struct {
	*idemtest.MemoryStore
	mu        sync.Mutex
	down      bool
	completes int
}

func (s *downStore) setDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

func (s *downStore) Complete(ctx context.Context, key, lease string, c idem.Completion) error {
	s.mu.Lock()
	s.completes++
	down := s.down
	s.mu.Unlock()
	for down {
		select {
		case <-ctx.Done():
			return errors.Join(errors.New("ThrottlingException"), ctx.Err())
		case <-time.After(10 * time.Millisecond): // the store's retry backoff
		}
		s.mu.Lock()
		down = s.down
		s.mu.Unlock()
	}
	return s.MemoryStore.Complete(ctx, key, lease, c)
}

// TestLateReceiptLands: an effect that overruns its lease (here outside
// Lambda, with no deadline) still gets its receipt written, since the write
// is fenced by the lease token and nobody took the record over. The old
// rule ("never write past the lease") reported Unconfirmed, and the next
// copy ran the effect again.
func TestLateReceiptLands(t *testing.T) {
	store := idemtest.NewMemoryStore()
	g := mustGuard(t, store, idem.WithLease(200*time.Millisecond), idem.WithSafetyMargin(100*time.Millisecond))
	runs := 0
	effect := func(ctx context.Context) ([]byte, error) {
		runs++
		time.Sleep(400 * time.Millisecond) // an effect that ignores its context and overruns the lease
		return []byte("v"), nil
	}
	res, err := g.Do(context.Background(), "k", nil, effect)
	if err != nil || res.Outcome != idem.Executed {
		t.Fatalf("effect past its lease, nobody took over: %+v, %v; want Executed", res, err)
	}
	// A fresh Guard (another process): the receipt is in the store.
	other := mustGuard(t, store, idem.WithLease(200*time.Millisecond), idem.WithSafetyMargin(100*time.Millisecond))
	if res, err := other.Do(context.Background(), "k", nil, effect); err != nil || res.Outcome != idem.Duplicate || runs != 1 {
		t.Fatalf("copy after the late receipt: %+v, %v, runs %d; want Duplicate, 1 run", res, err, runs)
	}
}

// TestLateReceiptIsFenced: when another attempt took the record over after
// the lease, the late receipt does not land: LeaseLost, and the new
// owner's record is intact.
func TestLateReceiptIsFenced(t *testing.T) {
	store := idemtest.NewMemoryStore()
	opts := []idem.Option{idem.WithLease(200 * time.Millisecond), idem.WithSafetyMargin(100 * time.Millisecond)}
	zombie, other := mustGuard(t, store, opts...), mustGuard(t, store, opts...)
	res, err := zombie.Do(context.Background(), "k", nil, func(ctx context.Context) ([]byte, error) {
		time.Sleep(300 * time.Millisecond) // past the lease
		res, err := other.Do(context.Background(), "k", nil, ok("new owner"))
		if err != nil || res.Outcome != idem.Rerun { // the zombie's effect may have taken place
			t.Errorf("takeover after the lease: %+v, %v", res, err)
		}
		return []byte("zombie"), nil
	})
	if !errors.Is(err, idem.ErrLeaseLost) || res.Outcome != idem.LeaseLost {
		t.Fatalf("late receipt after a takeover: %+v, %v; want LeaseLost", res, err)
	}
	rec, _, _ := store.Get(context.Background(), other.StorageKey("k"))
	if rec.Status != idem.StatusCompleted || string(rec.Result) != "new owner" {
		t.Fatalf("new owner's record %+v", rec)
	}
}

// TestReceiptWriteRunsToTheDeadline: the receipt is retried past the lease
// end, until the caller's deadline, and lands when the store comes back.
func TestReceiptWriteRunsToTheDeadline(t *testing.T) {
	store := &downStore{MemoryStore: idemtest.NewMemoryStore(), down: true}
	g := mustGuard(t, store, idem.WithLease(300*time.Millisecond), idem.WithSafetyMargin(100*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	time.AfterFunc(600*time.Millisecond, func() { store.setDown(false) }) // after the lease, before the deadline
	res, err := g.Do(ctx, "k", nil, ok("v"))
	if err != nil || res.Outcome != idem.Executed {
		t.Fatalf("store back after the lease, before the deadline: %+v, %v; want Executed", res, err)
	}
}

// TestOwedReceiptNotRunTwice: the receipt cannot be written before the
// deadline (Unconfirmed); a later call for the key in the same process — a
// copy in the same SQS batch, say — must not run the effect again, whether
// the store is still down (Unconfirmed again) or back (the owed receipt is
// written, Duplicate).
func TestOwedReceiptNotRunTwice(t *testing.T) {
	store := &downStore{MemoryStore: idemtest.NewMemoryStore(), down: true}
	g := mustGuard(t, store, idem.WithLease(200*time.Millisecond), idem.WithSafetyMargin(100*time.Millisecond))
	runs := 0
	effect := func(context.Context) ([]byte, error) { runs++; return []byte("card-1"), nil }
	call := func(d time.Duration) (idem.Result, error) {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		return g.Do(ctx, "k", []byte("p"), effect)
	}
	if res, err := call(400 * time.Millisecond); res.Outcome != idem.Unconfirmed || !errors.Is(err, idem.ErrUnconfirmed) {
		t.Fatalf("first: %+v, %v; want Unconfirmed", res, err)
	}
	// The lease has run out: without the owed receipt, this would take it.
	if res, err := call(400 * time.Millisecond); res.Outcome != idem.Unconfirmed || !errors.Is(err, idem.ErrUnconfirmed) || runs != 1 {
		t.Fatalf("copy while the store is down: %+v, %v, runs %d; want Unconfirmed, 1 run", res, err, runs)
	}
	if _, err := g.Do(context.Background(), "k", []byte("other"), effect); !errors.Is(err, idem.ErrPayloadMismatch) {
		t.Fatalf("copy with another payload: %v; want ErrPayloadMismatch", err)
	}
	store.setDown(false)
	res, err := call(time.Second)
	if err != nil || res.Outcome != idem.Duplicate || string(res.Value) != "card-1" || runs != 1 {
		t.Fatalf("copy after the store came back: %+v, %v, runs %d; want Duplicate of card-1, 1 run", res, err, runs)
	}
	rec, _, _ := store.Get(context.Background(), g.StorageKey("k"))
	if rec.Status != idem.StatusCompleted || string(rec.Result) != "card-1" {
		t.Fatalf("record %+v; want the owed receipt", rec)
	}
}

// TestOwedReceiptYieldsToTakeover: once another attempt has taken the
// record over, the owed receipt is dropped (fenced out) and the record
// decides.
func TestOwedReceiptYieldsToTakeover(t *testing.T) {
	store := &downStore{MemoryStore: idemtest.NewMemoryStore(), down: true}
	opts := []idem.Option{idem.WithLease(200 * time.Millisecond), idem.WithSafetyMargin(100 * time.Millisecond)}
	g, other := mustGuard(t, store, opts...), mustGuard(t, store, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	if res, _ := g.Do(ctx, "k", nil, ok("first")); res.Outcome != idem.Unconfirmed {
		t.Fatalf("first: %+v; want Unconfirmed", res)
	}
	store.setDown(false)
	if res, err := other.Do(context.Background(), "k", nil, ok("second")); err != nil || res.Outcome != idem.Rerun {
		t.Fatalf("another process after the lease: %+v, %v; want Rerun (the window)", res, err)
	}
	if res, err := g.Do(context.Background(), "k", nil, ok("third")); err != nil || res.Outcome != idem.Duplicate || string(res.Value) != "second" {
		t.Fatalf("copy in the first process: %+v, %v; want the new owner's receipt", res, err)
	}
}

func TestInProgressTellsWhenTheLeaseEnds(t *testing.T) {
	g := mustGuard(t, idemtest.NewMemoryStore(), idem.WithLease(time.Minute))
	_, err := g.Do(context.Background(), "k", nil, func(ctx context.Context) ([]byte, error) {
		l, _ := idem.LeaseFromContext(ctx)
		res, err := g.Do(ctx, "k", nil, ok("copy"))
		if !errors.Is(err, idem.ErrInProgress) || !res.LeaseUntil.Equal(l.Until) {
			t.Errorf("copy during the lease: %+v, %v; want InProgress until %s", res, err, l.Until)
		}
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestTransactional(t *testing.T) {
	if g := mustGuard(t, idemtest.NewMemoryStore()); !g.Transactional() {
		t.Error("a TxStore declaring transactions: not transactional")
	}
	// A wrapper that declares transactions but hides Commit: lease mode only.
	if g := mustGuard(t, struct{ idem.Store }{idemtest.NewMemoryStore()}); g.Transactional() {
		t.Error("a store without Commit: transactional")
	}
}

// TestRerunWithoutReceiptIsStillARerun: a re-run over an unknown outcome
// whose receipt then cannot be written is Unconfirmed, and still says it
// re-ran (Result.Rerun), so that every entry into the window is counted
// (found by the simulator: 296 such re-runs in 100,000 schedules counted
// nowhere).
func TestRerunWithoutReceiptIsStillARerun(t *testing.T) {
	store := &downStore{MemoryStore: idemtest.NewMemoryStore()}
	opts := []idem.Option{idem.WithLease(200 * time.Millisecond), idem.WithSafetyMargin(100 * time.Millisecond)}
	g := mustGuard(t, store, opts...)
	if res, _ := g.Do(context.Background(), "k", nil, func(context.Context) ([]byte, error) {
		return nil, errors.New("read tcp: i/o timeout")
	}); res.Outcome != idem.Failed || res.Rerun {
		t.Fatalf("first: %+v; want Failed, no re-run", res)
	}
	store.setDown(true)
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	res, err := g.Do(ctx, "k", nil, ok("again"))
	if res.Outcome != idem.Unconfirmed || !errors.Is(err, idem.ErrUnconfirmed) || !res.Rerun {
		t.Fatalf("re-run with the store down: %+v, %v; want Unconfirmed with Rerun set", res, err)
	}
	store.setDown(false)
	if res, err := g.Do(context.Background(), "new", nil, ok("v")); err != nil || res.Outcome != idem.Executed || res.Rerun {
		t.Fatalf("a new key: %+v, %v; want Executed, no re-run", res, err)
	}
}

// gatedStore fails every Complete; the first one only once gate is closed.
type gatedStore struct {
	*idemtest.MemoryStore
	mu      sync.Mutex
	calls   int
	down    bool
	waiting chan struct{} // closed when the first Complete waits at the gate
	gate    chan struct{}
}

func (s *gatedStore) Complete(ctx context.Context, key, lease string, c idem.Completion) error {
	s.mu.Lock()
	s.calls++
	n, down := s.calls, s.down
	s.mu.Unlock()
	if n == 1 {
		close(s.waiting)
		<-s.gate
	}
	if down {
		return errors.New("ThrottlingException")
	}
	return s.MemoryStore.Complete(ctx, key, lease, c)
}

func (s *gatedStore) setDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

// TestOwedReceiptOfTheLatestAttempt: two invocations in one process (Lambda
// Managed Instances) both owe the receipt of one key: the first one's
// receipt write hung past its lease, the second took the record over and
// ran the effect, and both writes failed. The first one's failure, reported
// last, must not replace the receipt of the attempt that holds the record:
// fenced out, it would be dropped, and the next copy would run the effect a
// third time (found by the simulator with several invocations per process).
func TestOwedReceiptOfTheLatestAttempt(t *testing.T) {
	store := &gatedStore{MemoryStore: idemtest.NewMemoryStore(), down: true,
		waiting: make(chan struct{}), gate: make(chan struct{})}
	g := mustGuard(t, store, idem.WithLease(200*time.Millisecond), idem.WithSafetyMargin(100*time.Millisecond))
	var mu sync.Mutex
	runs := 0
	effect := func(context.Context) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		runs++
		return []byte{byte('0' + runs)}, nil
	}
	first := make(chan idem.Result)
	go func() {
		res, _ := g.Do(context.Background(), "k", []byte("p"), effect)
		first <- res
	}()
	<-store.waiting
	// The first attempt's lease runs out while its receipt write hangs.
	leaseEnds(t, store, g.StorageKey("k"))
	res, err := g.Do(context.Background(), "k", []byte("p"), effect)
	if res.Outcome != idem.Unconfirmed || !res.Rerun {
		t.Fatalf("second attempt: %+v, %v; want an Unconfirmed re-run", res, err)
	}
	close(store.gate)
	if res := <-first; res.Outcome != idem.Unconfirmed {
		t.Fatalf("first attempt: %+v; want Unconfirmed", res)
	}
	store.setDown(false)
	leaseEnds(t, store, g.StorageKey("k")) // the second one's too
	res, err = g.Do(context.Background(), "k", []byte("p"), effect)
	if err != nil || res.Outcome != idem.Duplicate || string(res.Value) != "2" || runs != 2 {
		t.Fatalf("next copy: %+v, %v, runs %d; want Duplicate of the second attempt's receipt, 2 runs", res, err, runs)
	}
}

// leaseEnds waits until the lease of skey's record has run out.
func leaseEnds(t *testing.T, store interface {
	Get(context.Context, string) (idem.Record, bool, error)
}, skey string) {
	t.Helper()
	for {
		rec, _, err := store.Get(context.Background(), skey)
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(rec.LeaseUntil.Add(10 * time.Millisecond)) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
