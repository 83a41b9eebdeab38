package idemtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// The subtests of leases: takeover, fencing, retried writes, release.

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
	// A lease that ran out is an unknown outcome; Retry (the default) runs
	// the effect again: Rerun, the window.
	if b.Outcome != idem.Rerun || b.Attempts != 2 || string(b.Value) != "B" {
		t.Fatalf("takeover after lease expiry: %+v, want Rerun on attempt 2", b)
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

// acquisition returns an Acquisition of a fresh key with lease token.
func acquisition(token string) idem.Acquisition {
	now := time.Now()
	return idem.Acquisition{
		Key: unique("ns") + "#k", Lease: token, LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour), Now: now,
	}
}

// takeLease acquires a fresh key as the Guard judges it: an Acquire whose
// response was lost and that the store (or its SDK) sent again answers with
// the record the first attempt wrote — the caller's own lease — and
// acquired = false, as Store.Acquire's contract allows; that is acquired too.
// (A loaded LocalStack loses such responses.)
func takeLease(ctx context.Context, store idem.Store, a idem.Acquisition) (idem.Record, bool, error) {
	rec, ok, err := store.Acquire(ctx, a)
	return rec, ok || (err == nil && rec.Status == idem.StatusInProgress && rec.Lease == a.Lease), err
}

func (s *suite) fencing(t *testing.T, store idem.Store) {
	ctx := context.Background()
	a := acquisition("mine")
	now := a.Now
	rec, ok, err := takeLease(ctx, store, a)
	if err != nil || !ok || rec.Attempts != 1 || rec.Status != idem.StatusInProgress {
		t.Fatalf("Acquire: %+v, %v, %v", rec, ok, err)
	}
	done := idem.Completion{ExpiresAt: now.Add(time.Hour), Now: now}
	if err := store.Complete(ctx, a.Key, "theirs", done); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("Complete with a foreign lease: %v, want ErrLeaseLost", err)
	}
	if err := store.Release(ctx, a.Key, "theirs", idem.Released{Status: idem.StatusFailed, Reason: "x", Now: now}); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("Release with a foreign lease: %v, want ErrLeaseLost", err)
	}
	if err := store.Complete(ctx, unique("ns")+"#absent", "mine", done); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("Complete of an absent record: %v, want ErrLeaseLost", err)
	}
	other := a
	other.Lease = "other"
	rec, ok, err = store.Acquire(ctx, other)
	if err != nil || ok || rec.Lease != "mine" || rec.Status != idem.StatusInProgress {
		t.Fatalf("Acquire of a live lease: %+v, acquired %v, %v", rec, ok, err)
	}
	done.Result = []byte("r")
	if err := store.Complete(ctx, a.Key, "mine", done); err != nil {
		t.Fatalf("Complete with own lease: %v", err)
	}
}

// retriedWrites: a request whose response was lost is sent again (by an
// SDK's retries or the store's own). The second one must show the first
// one's write as the caller's own: the acquired record with the caller's
// lease (the Guard counts that as acquired, never as ErrInProgress), and
// Complete and Release succeed again instead of reporting ErrLeaseLost.
func (s *suite) retriedWrites(t *testing.T, store idem.Store) {
	ctx := context.Background()
	a := acquisition("mine")
	if _, ok, err := takeLease(ctx, store, a); err != nil || !ok {
		t.Fatalf("Acquire: %v, %v", ok, err)
	}
	rec, _, err := store.Acquire(ctx, a)
	if err != nil || rec.Lease != a.Lease || rec.Status != idem.StatusInProgress || rec.Attempts != 1 {
		t.Fatalf("the same Acquire again: %+v, %v; want the record it wrote (lease %q, attempt 1)", rec, err, a.Lease)
	}
	done := idem.Completion{Result: []byte("r"), ExpiresAt: a.ExpiresAt, Now: a.Now}
	for i := range 2 {
		if err := store.Complete(ctx, a.Key, a.Lease, done); err != nil {
			t.Fatalf("Complete #%d with own lease: %v", i+1, err)
		}
	}
	b := acquisition("mine-too")
	if _, ok, err := takeLease(ctx, store, b); err != nil || !ok {
		t.Fatalf("Acquire: %v, %v", ok, err)
	}
	for i := range 2 {
		if err := store.Release(ctx, b.Key, b.Lease, idem.Released{Status: idem.StatusFailed, Reason: "why", Now: b.Now}); err != nil {
			t.Fatalf("Release #%d with own lease: %v", i+1, err)
		}
	}
	// Through the Guard: an acquire whose response was lost still runs the
	// effect, once.
	lossy := lostAcquireAck{store}
	g := newGuard(t, lossy)
	ran := 0
	res, err := g.Do(ctx, unique("order"), []byte("p"), func(context.Context) ([]byte, error) { ran++; return nil, nil })
	if err != nil || res.Outcome != idem.Executed || ran != 1 {
		t.Fatalf("Do over an acquire whose first response was lost: %+v, %v, ran %d; want Executed once", res, err, ran)
	}
}

// lostAcquireAck sends every Acquire twice and answers with the second
// response, as a client does that retries a request whose response was lost.
type lostAcquireAck struct{ idem.Store }

func (l lostAcquireAck) Acquire(ctx context.Context, a idem.Acquisition) (idem.Record, bool, error) {
	if _, _, err := l.Store.Acquire(ctx, a); err != nil {
		return idem.Record{}, false, err
	}
	return l.Store.Acquire(ctx, a)
}

// release: an effect's error releases the record, FAILED when it is
// definite and UNKNOWN otherwise, and either is taken at once by the next
// delivery (with the Guard's default policy, Retry, an unknown outcome is
// run again), which learns what it took over.
func (s *suite) release(t *testing.T, store idem.Store) {
	for _, tc := range []struct {
		err  error
		want idem.Status
	}{
		{errors.New("smtp 451 try later for alice@example.com"), idem.StatusUnknown},
		{idem.Definite(errors.New("smtp 550 no such user alice@example.com")), idem.StatusFailed},
	} {
		g := newGuard(t, store)
		ctx := context.Background()
		key := unique("order")
		res, err := g.Do(ctx, key, []byte("p"), func(context.Context) ([]byte, error) { return nil, tc.err })
		if !errors.Is(err, tc.err) || res.Outcome != idem.Failed || res.Attempts != 1 {
			t.Fatalf("failing effect: %+v, %v", res, err)
		}
		if rec, ok := s.record(t, store, g.StorageKey(key)); ok {
			// By default the record keeps the error's class, not its text.
			if rec.Status != tc.want || rec.LastError != idem.ErrorClass(tc.err) || rec.Attempts != 1 {
				t.Fatalf("released record %+v; want %s", rec, tc.want)
			}
		}
		res, err = g.Do(ctx, key, []byte("p"), func(ctx context.Context) ([]byte, error) {
			if l, _ := idem.LeaseFromContext(ctx); l.Previous != tc.want {
				t.Errorf("the attempt after a %s release took over %q", tc.want, l.Previous)
			}
			return []byte("ok"), nil
		})
		if err != nil {
			t.Fatalf("Do after release: %v", err)
		}
		want := idem.Executed // after a definite failure
		if tc.want == idem.StatusUnknown {
			want = idem.Rerun // run again over an unknown outcome
		}
		if res.Outcome != want || res.Attempts != 2 {
			t.Fatalf("after release: %+v, want %s on attempt 2", res, want)
		}
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
	if rec, ok := s.record(t, store, g.StorageKey(key)); ok && (rec.Status != idem.StatusUnknown || rec.LastError != "panic") {
		t.Fatalf("record after a panic: %+v", rec)
	}
	res, err := g.Do(context.Background(), key, nil, value("ok"))
	if err != nil || res.Outcome != idem.Rerun || res.Attempts != 2 {
		t.Fatalf("after a panic: %+v, %v; want Rerun on attempt 2", res, err)
	}
}

// lateReceipt: an effect that outlives its lease, with nobody taking the
// record over, still has its receipt written: the write is fenced by the
// lease token, not by the lease's end, so a store must not refuse it for
// the time.
func (s *suite) lateReceipt(t *testing.T, store idem.Store) {
	clock := NewClock(time.Now())
	g, err := idem.New(store, unique("ns"), idem.WithClock(clock.Now), idem.WithLease(10*time.Second), idem.WithSafetyMargin(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	key := unique("order")
	res, err := g.Do(context.Background(), key, []byte("p"), func(context.Context) ([]byte, error) {
		clock.Advance(30 * time.Second) // well past the lease
		return []byte("late"), nil
	})
	if err != nil || res.Outcome != idem.Executed {
		t.Fatalf("receipt after the lease, nobody took over: %+v, %v; want Executed", res, err)
	}
	if rec, ok := s.record(t, store, g.StorageKey(key)); ok && (rec.Status != idem.StatusCompleted || string(rec.Result) != "late") {
		t.Fatalf("record %+v, want the late receipt", rec)
	}
}
