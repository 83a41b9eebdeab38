package idem_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

// recordingStore counts calls and remembers the last acquisition.
type recordingStore struct {
	*idemtest.MemoryStore
	mu    sync.Mutex
	calls int
	last  idem.Acquisition
}

func newRecordingStore() *recordingStore {
	return &recordingStore{MemoryStore: idemtest.NewMemoryStore()}
}

func (s *recordingStore) Acquire(ctx context.Context, a idem.Acquisition) (idem.Record, bool, error) {
	s.mu.Lock()
	s.calls++
	s.last = a
	s.mu.Unlock()
	return s.MemoryStore.Acquire(ctx, a)
}

func (s *recordingStore) Commit(ctx context.Context, t idem.Transaction) (idem.Record, bool, error) {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	return s.MemoryStore.Commit(ctx, t)
}

func (s *recordingStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func mustGuard(t *testing.T, store idem.Store, opts ...idem.Option) *idem.Guard {
	t.Helper()
	g, err := idem.New(store, "test", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func ok(v string) idem.Func {
	return func(context.Context) ([]byte, error) { return []byte(v), nil }
}

func TestLeaseFollowsDeadline(t *testing.T) {
	tests := []struct {
		name       string
		opts       []idem.Option
		deadline   time.Duration // 0: no deadline
		wantLease  time.Duration
		wantEffect time.Duration // effect context deadline, from now
	}{
		{"remaining time of ctx", nil, 30 * time.Second, 30 * time.Second, 28 * time.Second},
		{"explicit lease", []idem.Option{idem.WithLease(10 * time.Second)}, time.Minute, 10 * time.Second, 8 * time.Second},
		{"explicit margin", []idem.Option{idem.WithSafetyMargin(5 * time.Second)}, 30 * time.Second, 30 * time.Second, 25 * time.Second},
		{"no deadline", nil, 0, idem.DefaultLease, idem.DefaultLease - idem.DefaultSafetyMargin},
		// The receipt must still be written before the invocation ends.
		{"explicit lease beyond the deadline", []idem.Option{idem.WithLease(time.Minute)}, 30 * time.Second, time.Minute, 28 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// A frozen clock at the real now: the Lambda deadline is real time.
			clock := idemtest.NewClock(time.Now())
			store := newRecordingStore()
			g := mustGuard(t, store, append(tc.opts, idem.WithClock(clock.Now))...)
			ctx := context.Background()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, clock.Now().Add(tc.deadline))
				defer cancel()
			}
			start := clock.Now()
			var effectDeadline time.Time
			_, err := g.Do(ctx, "k-"+tc.name, nil, func(ctx context.Context) ([]byte, error) {
				effectDeadline, _ = ctx.Deadline()
				return nil, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			lease := store.last.LeaseUntil.Sub(start)
			if d := lease - tc.wantLease; d < -50*time.Millisecond || d > 50*time.Millisecond {
				t.Errorf("lease %s, want %s", lease, tc.wantLease)
			}
			if d := effectDeadline.Sub(start) - tc.wantEffect; d < -50*time.Millisecond || d > 50*time.Millisecond {
				t.Errorf("effect deadline in %s, want %s", effectDeadline.Sub(start), tc.wantEffect)
			}
			if !effectDeadline.Before(store.last.LeaseUntil) {
				t.Errorf("effect deadline %s not before lease end %s", effectDeadline, store.last.LeaseUntil)
			}
		})
	}
}

func TestLiveLeaseOutlivesShortRetention(t *testing.T) {
	store := newRecordingStore()
	g := mustGuard(t, store, idem.WithRetention(time.Second), idem.WithLease(time.Minute))
	_, err := g.Do(context.Background(), "k", nil, func(ctx context.Context) ([]byte, error) {
		res, err := g.Do(ctx, "k", nil, ok("second"))
		if !errors.Is(err, idem.ErrInProgress) {
			t.Errorf("second delivery during a live lease: %+v, %v; want ErrInProgress", res, err)
		}
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if a := store.last; a.ExpiresAt.Before(a.LeaseUntil) {
		t.Fatalf("expiresAt %s before leaseUntil %s", a.ExpiresAt, a.LeaseUntil)
	}
}

func TestCachedResultIsACopy(t *testing.T) {
	g := mustGuard(t, idemtest.NewMemoryStore(), idem.WithCache(10))
	ctx := context.Background()
	res, err := g.Do(ctx, "k", nil, ok("abc"))
	if err != nil {
		t.Fatal(err)
	}
	res.Value[0] = 'X'
	dup, _ := g.Do(ctx, "k", nil, ok("other"))
	dup.Value[1] = 'Y'
	again, _ := g.Do(ctx, "k", nil, ok("other"))
	if !again.Cached || string(again.Value) != "abc" {
		t.Fatalf("replay %q (cached %v), want abc: callers' changes leaked into the cache", again.Value, again.Cached)
	}
}

func TestNoTimeLeftMakesNoCall(t *testing.T) {
	store := newRecordingStore()
	g := mustGuard(t, store)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second) // < 2 s margin
	defer cancel()
	res, err := g.Do(ctx, "k", nil, ok("v"))
	if !errors.Is(err, context.DeadlineExceeded) || res.Outcome != idem.Failed || store.count() != 0 {
		t.Fatalf("got %+v, %v after %d calls; want DeadlineExceeded and no call", res, err, store.count())
	}
}

func TestCacheAnswersDuplicatesWithoutRequest(t *testing.T) {
	clock := idemtest.NewClock(time.Now())
	store := newRecordingStore()
	g := mustGuard(t, store, idem.WithCache(2), idem.WithClock(clock.Now), idem.WithRetention(time.Hour))
	ctx := context.Background()
	for _, k := range []string{"a", "b"} {
		if _, err := g.Do(ctx, k, []byte(k), ok("v-"+k)); err != nil {
			t.Fatal(err)
		}
	}
	before := store.count()
	res, err := g.Do(ctx, "a", []byte("a"), ok("x"))
	if err != nil || res.Outcome != idem.Duplicate || !res.Cached || string(res.Value) != "v-a" || store.count() != before {
		t.Fatalf("cached duplicate: %+v, %v, %d requests", res, err, store.count()-before)
	}
	if _, err := g.Do(ctx, "a", []byte("other"), ok("x")); !errors.Is(err, idem.ErrPayloadMismatch) {
		t.Fatalf("cached mismatch: %v", err)
	}
	// "c" evicts the least recently used, "b".
	if _, err := g.Do(ctx, "c", nil, ok("v-c")); err != nil {
		t.Fatal(err)
	}
	before = store.count()
	if res, _ := g.Do(ctx, "b", []byte("b"), ok("x")); res.Cached || res.Outcome != idem.Duplicate || store.count() != before+1 {
		t.Fatalf("evicted key answered from cache: %+v", res)
	}
	// An expired receipt is not answered from the cache.
	clock.Advance(2 * time.Hour)
	if res, _ := g.Do(ctx, "a", []byte("a"), ok("again")); res.Outcome != idem.Executed {
		t.Fatalf("expired cache entry: %+v, want Executed", res)
	}
}

func TestObserverSeesEveryOutcome(t *testing.T) {
	var mu sync.Mutex
	seen := map[idem.Outcome]int{}
	store := idemtest.NewMemoryStore()
	g := mustGuard(t, store, idem.WithObserver(func(_ context.Context, e idem.Event) {
		mu.Lock()
		defer mu.Unlock()
		if e.Namespace != "test" {
			t.Errorf("namespace %q", e.Namespace)
		}
		if (e.Err == nil) != (e.Outcome == idem.Executed || e.Outcome == idem.Duplicate) {
			t.Errorf("outcome %v with err %v", e.Outcome, e.Err)
		}
		seen[e.Outcome]++
	}))
	ctx := context.Background()
	_, _ = g.Do(ctx, "k", []byte("p"), ok("v"))                                                       // executed
	_, _ = g.Do(ctx, "k", []byte("p"), ok("v"))                                                       // duplicate
	_, _ = g.Do(ctx, "k", []byte("q"), ok("v"))                                                       // mismatch
	_, _ = g.Do(ctx, "f", nil, func(context.Context) ([]byte, error) { return nil, errors.New("x") }) // failed
	_, _ = g.Do(ctx, "", nil, ok("v"))                                                                // rejected
	_, _ = g.Do(ctx, "held", nil, func(context.Context) ([]byte, error) {
		_, _ = g.Do(ctx, "held", nil, ok("v")) // in progress
		return nil, nil
	})
	func() {
		defer func() { _ = recover() }()
		_, _ = g.Do(ctx, "p", nil, func(context.Context) ([]byte, error) { panic("boom") }) // failed
	}()
	want := map[idem.Outcome]int{idem.Executed: 2, idem.Duplicate: 1, idem.Mismatch: 1, idem.Failed: 2, idem.Rejected: 1, idem.InProgress: 1}
	for o, n := range want {
		if seen[o] != n {
			t.Errorf("%v seen %d times, want %d (all: %v)", o, seen[o], n, seen)
		}
	}
}

func TestStorageKeyHidesBusinessKey(t *testing.T) {
	store := idemtest.NewMemoryStore()
	hashed := mustGuard(t, store)
	plain := mustGuard(t, store, idem.WithPlainKeys())
	if k := hashed.StorageKey("alice@example.com"); strings.Contains(k, "alice") || !strings.HasPrefix(k, "test#") || len(k) != len("test#")+64 {
		t.Fatalf("hashed storage key %q", k)
	}
	if k := plain.StorageKey("order-1"); k != "test#order-1" {
		t.Fatalf("plain storage key %q", k)
	}
}

func TestDoTxNeedsTxStore(t *testing.T) {
	g := mustGuard(t, struct{ idem.Store }{idemtest.NewMemoryStore()})
	_, err := g.DoTx(context.Background(), "k", nil, func(context.Context) (idem.TxEffect, error) { return idem.TxEffect{}, nil })
	if !errors.Is(err, idem.ErrNotTransactional) {
		t.Fatalf("got %v, want ErrNotTransactional", err)
	}
}

func TestTxEffectErrorWritesNothing(t *testing.T) {
	store := idemtest.NewMemoryStore()
	g := mustGuard(t, store)
	boom := errors.New("cannot compute")
	res, err := g.DoTx(context.Background(), "k", nil, func(context.Context) (idem.TxEffect, error) {
		return idem.TxEffect{Writes: []any{"w"}}, boom
	})
	if !errors.Is(err, boom) || res.Outcome != idem.Failed || len(store.Writes()) != 0 {
		t.Fatalf("got %+v, %v, writes %v", res, err, store.Writes())
	}
	res, err = g.DoTx(context.Background(), "k", nil, func(context.Context) (idem.TxEffect, error) {
		return idem.TxEffect{Writes: []any{"w"}, Result: []byte("r")}, nil
	})
	if err != nil || res.Outcome != idem.Executed || len(store.Writes()) != 1 {
		t.Fatalf("retry: %+v, %v, writes %v", res, err, store.Writes())
	}
}

func TestOutcomeString(t *testing.T) {
	if idem.LeaseLost.String() != "lease_lost" || idem.Outcome(0).String() != "unknown" {
		t.Fatal(idem.LeaseLost.String(), idem.Outcome(0).String())
	}
}

func TestLeaseNotLongerThanMarginIsInvalid(t *testing.T) {
	for _, opts := range [][]idem.Option{
		{idem.WithLease(2 * time.Second), idem.WithSafetyMargin(2 * time.Second)},
		{idem.WithSafetyMargin(3 * time.Second), idem.WithLease(time.Second)}, // order does not matter
		{idem.WithLease(idem.DefaultSafetyMargin)},
	} {
		if _, err := idem.New(idemtest.NewMemoryStore(), "test", opts...); !errors.Is(err, idem.ErrInvalid) {
			t.Errorf("New: %v, want ErrInvalid", err)
		}
	}
}

func TestMaxResultSizeBoundedByStore(t *testing.T) {
	store := idemtest.NewMemoryStore()
	if _, err := idem.New(store, "test", idem.WithMaxResultSize(idemtest.MemoryMaxResultSize+1)); !errors.Is(err, idem.ErrInvalid) {
		t.Fatalf("cap above the store's: %v, want ErrInvalid", err)
	}
	if _, err := idem.New(store, "test", idem.WithMaxResultSize(idemtest.MemoryMaxResultSize)); err != nil {
		t.Fatalf("cap at the store's: %v", err)
	}
	// A store that keeps less than the default lowers the default.
	small := smallStore{store}
	g, err := idem.New(small, "t", idem.WithPlainKeys())
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Do(context.Background(), "k", nil, ok(strings.Repeat("x", 101)))
	if err != nil || res.Outcome != idem.Executed || !res.ResultOmitted {
		t.Fatalf("result over a small store's cap: %+v, %v; want Executed, ResultOmitted", res, err)
	}
}

type smallStore struct{ *idemtest.MemoryStore }

func (smallStore) Capabilities() idem.Capabilities {
	return idem.Capabilities{MaxResultSize: 100, MaxKeySize: 20}
}

func TestStorageKeyBoundedByStore(t *testing.T) {
	g := mustGuard(t, smallStore{idemtest.NewMemoryStore()}, idem.WithPlainKeys())
	if res, err := g.Do(context.Background(), "123456789012345", nil, ok("v")); err != nil || res.Outcome != idem.Executed {
		t.Fatalf("storage key of 20 bytes: %+v, %v", res, err) // "test#" + 15
	}
	res, err := g.Do(context.Background(), "1234567890123456", nil, ok("v"))
	if !errors.Is(err, idem.ErrInvalid) || res.Outcome != idem.Rejected {
		t.Fatalf("storage key of 21 bytes: %+v, %v; want ErrInvalid", res, err)
	}
	if _, err := idem.New(struct{ idem.Store }{noLimits{}}, "test"); !errors.Is(err, idem.ErrInvalid) {
		t.Fatalf("store declaring no limits: %v, want ErrInvalid", err)
	}
}

type noLimits struct{ idem.Store }

func (noLimits) Capabilities() idem.Capabilities { return idem.Capabilities{} }

// refusingStore refuses every non-empty result at Complete and Commit, as a
// store does whose size computation was off.
type refusingStore struct {
	*idemtest.MemoryStore
	completes, commits int
}

func (s *refusingStore) Complete(ctx context.Context, key, lease string, c idem.Completion) error {
	s.completes++
	if len(c.Result) > 0 {
		return idem.ErrResultTooLarge
	}
	return s.MemoryStore.Complete(ctx, key, lease, c)
}

func (s *refusingStore) Commit(ctx context.Context, tx idem.Transaction) (idem.Record, bool, error) {
	s.commits++
	if len(tx.Result) > 0 {
		return idem.Record{}, false, idem.ErrResultTooLarge
	}
	return s.MemoryStore.Commit(ctx, tx)
}

func TestResultRefusedByStoreKeepsReceipt(t *testing.T) {
	store := &refusingStore{MemoryStore: idemtest.NewMemoryStore()}
	g := mustGuard(t, store)
	ctx := context.Background()
	runs := 0
	for range 3 {
		res, err := g.Do(ctx, "k", nil, func(context.Context) ([]byte, error) { runs++; return []byte("big"), nil })
		if err != nil || !res.ResultOmitted {
			t.Fatalf("Do: %+v, %v", res, err)
		}
	}
	if runs != 1 || store.completes != 2 {
		t.Fatalf("effect ran %d times, %d completes; want 1 run and a second complete without the result", runs, store.completes)
	}
	for range 2 {
		res, err := g.DoTx(ctx, "t", nil, func(context.Context) (idem.TxEffect, error) {
			return idem.TxEffect{Writes: []any{"w"}, Result: []byte("big")}, nil
		})
		if err != nil || !res.ResultOmitted || (res.Outcome != idem.Executed && res.Outcome != idem.Duplicate) {
			t.Fatalf("DoTx: %+v, %v", res, err)
		}
	}
	if n := len(store.Writes()); n != 1 {
		t.Fatalf("transactional writes applied %d times, want 1", n)
	}
}

// flakyStore fails Acquire, Complete or Release as told.
type flakyStore struct {
	*idemtest.MemoryStore
	acquireErr, commitErr error
	hangComplete          bool
	completeReturned      time.Time
}

var errDown = errors.New("connection refused")

func (s *flakyStore) Acquire(ctx context.Context, a idem.Acquisition) (idem.Record, bool, error) {
	if s.acquireErr != nil {
		return idem.Record{}, false, s.acquireErr
	}
	return s.MemoryStore.Acquire(ctx, a)
}

// Complete, when hanging, retries a throttled write until its context ends,
// as dynamostore does.
func (s *flakyStore) Complete(ctx context.Context, key, lease string, c idem.Completion) error {
	if s.hangComplete {
		<-ctx.Done()
		s.completeReturned = time.Now()
		return errors.Join(errors.New("ThrottlingException"), ctx.Err())
	}
	return s.MemoryStore.Complete(ctx, key, lease, c)
}

func (s *flakyStore) Commit(ctx context.Context, tx idem.Transaction) (idem.Record, bool, error) {
	if s.commitErr != nil {
		return idem.Record{}, false, s.commitErr
	}
	return s.MemoryStore.Commit(ctx, tx)
}

func TestStoreErrorIsNotAnEffectError(t *testing.T) {
	store := &flakyStore{MemoryStore: idemtest.NewMemoryStore(), acquireErr: errDown}
	g := mustGuard(t, store)
	ran := false
	res, err := g.Do(context.Background(), "k", nil, func(context.Context) ([]byte, error) { ran = true; return nil, nil })
	if ran || res.Outcome != idem.StoreError || !errors.Is(err, idem.ErrStore) || !errors.Is(err, errDown) {
		t.Fatalf("acquire failing: %+v, %v (ran %v); want StoreError wrapping ErrStore", res, err, ran)
	}
	store.acquireErr = nil
	boom := errors.New("smtp 554")
	res, err = g.Do(context.Background(), "k", nil, func(context.Context) ([]byte, error) { return nil, boom })
	if res.Outcome != idem.Failed || errors.Is(err, idem.ErrStore) || !errors.Is(err, boom) {
		t.Fatalf("effect failing: %+v, %v; want Failed, not ErrStore", res, err)
	}
	store.commitErr = errDown
	res, err = g.DoTx(context.Background(), "t", nil, func(context.Context) (idem.TxEffect, error) { return idem.TxEffect{}, nil })
	if res.Outcome != idem.StoreError || !errors.Is(err, idem.ErrStore) {
		t.Fatalf("commit failing: %+v, %v; want StoreError", res, err)
	}
	store.commitErr = fmt.Errorf("write 0 condition failed: %w", idem.ErrTxAborted)
	res, err = g.DoTx(context.Background(), "t", nil, func(context.Context) (idem.TxEffect, error) { return idem.TxEffect{}, nil })
	if res.Outcome != idem.Failed || errors.Is(err, idem.ErrStore) || !errors.Is(err, idem.ErrTxAborted) {
		t.Fatalf("commit aborted by the effect's own write: %+v, %v; want Failed", res, err)
	}
}

func TestOwnAcquireAfterLostResponse(t *testing.T) {
	store := idemtest.NewMemoryStore()
	g := mustGuard(t, lostAck{store})
	runs := 0
	res, err := g.Do(context.Background(), "k", []byte("p"), func(context.Context) ([]byte, error) { runs++; return nil, nil })
	if err != nil || res.Outcome != idem.Executed || res.Attempts != 1 || runs != 1 {
		t.Fatalf("Do whose acquire response was lost: %+v, %v, runs %d; want Executed on attempt 1", res, err, runs)
	}
}

// lostAck answers each Acquire with the response of a second, identical
// request, as when the first response is lost and the client retries.
type lostAck struct{ idem.Store }

func (l lostAck) Acquire(ctx context.Context, a idem.Acquisition) (idem.Record, bool, error) {
	_, _, _ = l.Store.Acquire(ctx, a)
	return l.Store.Acquire(ctx, a)
}

func TestLastErrorIsTheClassByDefault(t *testing.T) {
	store := idemtest.NewMemoryStore()
	for _, tc := range []struct {
		opts []idem.Option
		want string
	}{
		{nil, "*errors.errorString"},
		{[]idem.Option{idem.WithErrorText(error.Error)}, "order alice@example.com refused"},
		{[]idem.Option{idem.WithErrorText(func(error) string { return "redacted" })}, "redacted"},
	} {
		g := mustGuard(t, store, tc.opts...)
		key := "k-" + tc.want
		_, _ = g.Do(context.Background(), key, nil, func(context.Context) ([]byte, error) {
			return nil, errors.New("order alice@example.com refused")
		})
		rec, _, _ := store.Get(context.Background(), g.StorageKey(key))
		if rec.LastError != tc.want {
			t.Errorf("lastError %q, want %q", rec.LastError, tc.want)
		}
	}
}

func TestClassifyKeepsTheError(t *testing.T) {
	base := errors.New("refused")
	err := idem.Classify(base, "provider-refused")
	if !errors.Is(err, base) || err.Error() != "refused" || idem.Classify(nil, "x") != nil {
		t.Fatalf("Classify(%v) = %v: want it to wrap and read as the error, nil for nil", base, err)
	}
}

func TestErrorClass(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{errors.New("x"), "*errors.errorString"},
		{fmt.Errorf("wrapped: %w", context.DeadlineExceeded), "context deadline exceeded"},
		{fmt.Errorf("a: %w", &os.PathError{Op: "open", Path: "/secret/alice", Err: os.ErrNotExist}), "*errors.errorString"},
		{errors.Join(&os.PathError{}, errors.New("y")), "*fs.PathError, *errors.errorString"},
		{idem.Classify(errors.New("sms provider said 503 for +44..."), "provider-unavailable"), "provider-unavailable"},
		{fmt.Errorf("send: %w", idem.Classify(context.DeadlineExceeded, "provider-timeout")), "provider-timeout"},
		{idem.Classify(errors.New("x"), ""), "*errors.errorString"},
	} {
		if got := idem.ErrorClass(tc.err); got != tc.want {
			t.Errorf("ErrorClass(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
