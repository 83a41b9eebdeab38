package idemtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// Getter is implemented by stores that can read a record by storage key.
// TestStore uses it, when present, to check what was written.
type Getter interface {
	Get(ctx context.Context, key string) (idem.Record, bool, error)
}

// Option configures TestStore.
type Option func(*suite)

// WithCounter lets TestStore check that transactional writes are applied
// exactly once: write returns a store-specific write that increments the
// counter id, and count reads it.
func WithCounter(write func(id string) any, count func(ctx context.Context, id string) (int, error)) Option {
	return func(s *suite) { s.write, s.count = write, count }
}

type suite struct {
	newStore func(t *testing.T) idem.Store
	write    func(id string) any
	count    func(ctx context.Context, id string) (int, error)
}

// TestStore is the conformance suite for idem.Store implementations, in the
// manner of testing/fstest.TestFS. newStore is called once per subtest; it
// may return the same store every time (every subtest uses its own
// namespace and keys). Transactional subtests run when the store implements
// idem.TxStore.
func TestStore(t *testing.T, newStore func(t *testing.T) idem.Store, opts ...Option) {
	s := &suite{newStore: newStore}
	for _, o := range opts {
		o(s)
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, store idem.Store)
	}{
		{"FirstRun", s.firstRun},
		{"DuplicateReplaysResult", s.duplicate},
		{"ConcurrentSameKeyRunsOnce", s.concurrent},
		{"InProgressWhileLeaseLive", s.inProgress},
		{"LeaseExpiryTakeover", s.takeover},
		{"ZombieCompleteLeaseLost", s.zombie},
		{"FencingOnStore", s.fencing},
		{"ReleaseAllowsImmediateReacquire", s.release},
		{"PanicReleases", s.panics},
		{"FingerprintMismatch", s.mismatch},
		{"ExpiredReceiptRunsAgain", s.expired},
		{"AttemptsCounted", s.attempts},
		{"OversizedResult", s.oversized},
		{"BadInputMakesNoCall", s.badInput},
		{"TxFirstAndDuplicate", s.txFirst},
		{"TxConcurrentDuplicates", s.txConcurrent},
		{"TxMismatch", s.txMismatch},
		{"TxTakesFailedRecord", s.txAfterFailed},
		{"TxBlockedByLiveLease", s.txInProgress},
		{"TxRetriedCommitIsOwn", s.txRetried},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, s.newStore(t))
		})
	}
}

// Clock is a settable clock for WithClock.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock set to start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// unique returns a name no other run of the suite uses, so that stores
// shared between subtests (one DynamoDB table) see no interference.
func unique(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

func newGuard(t *testing.T, store idem.Store, opts ...idem.Option) *idem.Guard {
	t.Helper()
	g, err := idem.New(store, unique("ns"), opts...)
	if err != nil {
		t.Fatalf("idem.New: %v", err)
	}
	return g
}

func value(v string) idem.Func {
	return func(context.Context) ([]byte, error) { return []byte(v), nil }
}

func mustOutcome(t *testing.T, what string, res idem.Result, err error, want idem.Outcome) {
	t.Helper()
	if res.Outcome != want {
		t.Fatalf("%s: outcome %v (err %v), want %v", what, res.Outcome, err, want)
	}
}

func (s *suite) record(t *testing.T, store idem.Store, key string) (idem.Record, bool) {
	t.Helper()
	g, ok := store.(Getter)
	if !ok {
		return idem.Record{}, false
	}
	rec, found, err := g.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get %q: %v", key, err)
	}
	if !found {
		t.Fatalf("Get %q: no record", key)
	}
	return rec, true
}

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

// leaseRace runs the takeover scenario: attempt A holds a 10 s lease; while
// its effect runs the clock passes the lease, attempt B takes over and
// completes; then A tries to complete.
func (s *suite) leaseRace(t *testing.T, store idem.Store) (a, b, after idem.Result, aErr error) {
	t.Helper()
	clock := NewClock(time.Now())
	ns := unique("ns")
	mk := func() *idem.Guard {
		g, err := idem.New(store, ns, idem.WithClock(clock.Now), idem.WithLease(10*time.Second), idem.WithSafetyMargin(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	ga, gb := mk(), mk()
	ctx := context.Background()
	key := unique("order")
	a, aErr = ga.Do(ctx, key, []byte("p"), func(context.Context) ([]byte, error) {
		clock.Advance(11 * time.Second)
		var err error
		b, err = gb.Do(ctx, key, []byte("p"), value("B"))
		if err != nil {
			t.Errorf("takeover Do: %v", err)
		}
		return []byte("A"), nil
	})
	after, err := mk().Do(ctx, key, []byte("p"), value("C"))
	if err != nil {
		t.Fatalf("Do after the race: %v", err)
	}
	return a, b, after, aErr
}

func (s *suite) takeover(t *testing.T, store idem.Store) {
	_, b, _, _ := s.leaseRace(t, store)
	if b.Outcome != idem.Executed || b.Attempts != 2 || string(b.Value) != "B" {
		t.Fatalf("takeover after lease expiry: %+v, want Executed on attempt 2", b)
	}
}

func (s *suite) zombie(t *testing.T, store idem.Store) {
	a, _, after, err := s.leaseRace(t, store)
	if !errors.Is(err, idem.ErrLeaseLost) || a.Outcome != idem.LeaseLost {
		t.Fatalf("zombie complete: %+v, %v; want ErrLeaseLost", a, err)
	}
	if after.Outcome != idem.Duplicate || string(after.Value) != "B" || after.Attempts != 2 {
		t.Fatalf("new owner's receipt: %+v, want Duplicate of B", after)
	}
}

func (s *suite) fencing(t *testing.T, store idem.Store) {
	ctx := context.Background()
	now := time.Now()
	key := unique("ns") + "#k"
	rec, ok, err := store.Acquire(ctx, idem.Acquisition{
		Key: key, Lease: "mine", LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour), Now: now,
	})
	if err != nil || !ok || rec.Attempts != 1 || rec.Status != idem.StatusInProgress {
		t.Fatalf("Acquire: %+v, %v, %v", rec, ok, err)
	}
	if err := store.Complete(ctx, key, "theirs", idem.Completion{ExpiresAt: now.Add(time.Hour), Now: now}); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("Complete with a foreign lease: %v, want ErrLeaseLost", err)
	}
	if err := store.Release(ctx, key, "theirs", "x", now); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("Release with a foreign lease: %v, want ErrLeaseLost", err)
	}
	if err := store.Complete(ctx, unique("ns")+"#absent", "mine", idem.Completion{ExpiresAt: now.Add(time.Hour), Now: now}); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("Complete of an absent record: %v, want ErrLeaseLost", err)
	}
	rec, ok, err = store.Acquire(ctx, idem.Acquisition{
		Key: key, Lease: "other", LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour), Now: now,
	})
	if err != nil || ok || rec.Lease != "mine" || rec.Status != idem.StatusInProgress {
		t.Fatalf("Acquire of a live lease: %+v, acquired %v, %v", rec, ok, err)
	}
	if err := store.Complete(ctx, key, "mine", idem.Completion{Result: []byte("r"), ExpiresAt: now.Add(time.Hour), Now: now}); err != nil {
		t.Fatalf("Complete with own lease: %v", err)
	}
}

func (s *suite) release(t *testing.T, store idem.Store) {
	g := newGuard(t, store)
	ctx := context.Background()
	key := unique("order")
	boom := errors.New("smtp 451 try later")
	res, err := g.Do(ctx, key, []byte("p"), func(context.Context) ([]byte, error) { return nil, boom })
	if !errors.Is(err, boom) || res.Outcome != idem.Failed || res.Attempts != 1 {
		t.Fatalf("failing effect: %+v, %v", res, err)
	}
	if rec, ok := s.record(t, store, g.StorageKey(key)); ok {
		if rec.Status != idem.StatusFailed || rec.LastError != boom.Error() || rec.Attempts != 1 {
			t.Fatalf("released record %+v", rec)
		}
	}
	res, err = g.Do(ctx, key, []byte("p"), value("ok"))
	if err != nil {
		t.Fatalf("Do after release: %v", err)
	}
	if res.Outcome != idem.Executed || res.Attempts != 2 {
		t.Fatalf("after release: %+v, want Executed on attempt 2", res)
	}
}

func (s *suite) panics(t *testing.T, store idem.Store) {
	g := newGuard(t, store)
	key := unique("order")
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("panic was swallowed")
			}
		}()
		_, _ = g.Do(context.Background(), key, nil, func(context.Context) ([]byte, error) { panic("nil map") })
	}()
	res, err := g.Do(context.Background(), key, nil, value("ok"))
	if err != nil || res.Outcome != idem.Executed || res.Attempts != 2 {
		t.Fatalf("after a panic: %+v, %v; want Executed on attempt 2", res, err)
	}
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
	g := newGuard(t, store)
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

func (s *suite) oversized(t *testing.T, store idem.Store) {
	g := newGuard(t, store) // default cap
	ctx := context.Background()
	key := unique("order")
	big := bytes.Repeat([]byte("x"), idem.DefaultMaxResultSize+50<<10)
	res, err := g.Do(ctx, key, []byte("p"), func(context.Context) ([]byte, error) { return big, nil })
	if err != nil || res.Outcome != idem.Executed || !res.ResultOmitted || !bytes.Equal(res.Value, big) {
		t.Fatalf("oversized result: outcome %v omitted %v err %v", res.Outcome, res.ResultOmitted, err)
	}
	ran := false
	res, err = g.Do(ctx, key, []byte("p"), func(context.Context) ([]byte, error) { ran = true; return nil, nil })
	if err != nil || ran || res.Outcome != idem.Duplicate || !res.ResultOmitted || res.Value != nil {
		t.Fatalf("duplicate of oversized: %+v, %v (ran %v); want Duplicate, ResultOmitted, no value", res, err, ran)
	}
}

// countingStore fails the test on any call.
type countingStore struct {
	idem.Store
	calls atomic.Int32
}

func (c *countingStore) Acquire(ctx context.Context, a idem.Acquisition) (idem.Record, bool, error) {
	c.calls.Add(1)
	return c.Store.Acquire(ctx, a)
}

func (s *suite) badInput(t *testing.T, store idem.Store) {
	cs := &countingStore{Store: store}
	g := newGuard(t, cs)
	ctx := context.Background()
	for name, key := range map[string]string{
		"empty":    "",
		"too long": strings.Repeat("k", idem.MaxKeyLen+1),
		"bad utf8": "\xff\xfe",
	} {
		res, err := g.Do(ctx, key, nil, value("v"))
		if !errors.Is(err, idem.ErrInvalid) || res.Outcome != idem.Rejected {
			t.Errorf("%s key: %+v, %v; want ErrInvalid", name, res, err)
		}
	}
	if _, err := g.Do(ctx, "k", nil, nil); !errors.Is(err, idem.ErrInvalid) {
		t.Errorf("nil func: %v, want ErrInvalid", err)
	}
	if n := cs.calls.Load(); n != 0 {
		t.Fatalf("bad input made %d store calls", n)
	}
	for name, bad := range map[string]func() error{
		"separator in namespace": func() error { _, err := idem.New(store, "a#b"); return err },
		"empty namespace":        func() error { _, err := idem.New(store, ""); return err },
		"zero lease":             func() error { _, err := idem.New(store, "ns", idem.WithLease(0)); return err },
		"negative retention":     func() error { _, err := idem.New(store, "ns", idem.WithRetention(-time.Second)); return err },
		"zero margin":            func() error { _, err := idem.New(store, "ns", idem.WithSafetyMargin(0)); return err },
	} {
		if err := bad(); !errors.Is(err, idem.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

func (s *suite) txStore(t *testing.T, store idem.Store) idem.TxStore {
	ts, ok := store.(idem.TxStore)
	if !ok {
		t.Skip("store does not implement idem.TxStore")
	}
	return ts
}

// txEffect returns a TxFunc incrementing counter id (when the suite has a
// counter) and returning result.
func (s *suite) txEffect(id, result string) idem.TxFunc {
	return func(context.Context) (idem.Tx, error) {
		tx := idem.Tx{Result: []byte(result)}
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
