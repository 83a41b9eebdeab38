package idem_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

// reconciler answers as told and counts its calls.
type reconciler struct {
	applied bool
	result  string
	err     error
	calls   int
}

func (r *reconciler) fn(ctx context.Context) (bool, []byte, error) {
	r.calls++
	if _, ok := idem.LeaseFromContext(ctx); !ok {
		return false, nil, errors.New("reconcile ran without the lease in its context")
	}
	return r.applied, []byte(r.result), r.err
}

var errTimeout = fmt.Errorf("POST /sms: %w", context.DeadlineExceeded)

// failOnce is an effect that fails with err once (the first attempt), and
// counts the runs.
func failOnce(err error, runs *int) idem.Func {
	return func(context.Context) ([]byte, error) {
		*runs++
		if *runs == 1 {
			return nil, err
		}
		return []byte("sent"), nil
	}
}

func TestUnknownOutcomeIsReconciled(t *testing.T) {
	for _, tc := range []struct {
		name     string
		r        reconciler
		policy   idem.UnknownPolicy
		want     idem.Outcome
		wantRuns int // of the effect, the failed first run included
		value    string
	}{
		{"applied: the receipt, nothing run", reconciler{applied: true, result: "sms-1"}, idem.Retry, idem.Reconciled, 1, "sms-1"},
		{"applied, Hold: the receipt too", reconciler{applied: true, result: "sms-1"}, idem.Hold, idem.Reconciled, 1, "sms-1"},
		{"not applied: run", reconciler{}, idem.Hold, idem.Executed, 2, "sent"},
		{"cannot tell, Retry: run again (the window)", reconciler{err: errors.New("lookup 503")}, idem.Retry, idem.Rerun, 2, "sent"},
		{"cannot tell, Hold: parked", reconciler{err: errors.New("lookup 503")}, idem.Hold, idem.Held, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := idemtest.NewMemoryStore()
			g := mustGuard(t, store, idem.WithUnknownOutcome(tc.policy))
			runs := 0
			effect := failOnce(errTimeout, &runs)
			r := tc.r
			if res, err := g.Do(context.Background(), "k", []byte("p"), effect, idem.Reconcile(r.fn)); res.Outcome != idem.Failed || !errors.Is(err, errTimeout) {
				t.Fatalf("first: %+v, %v; want Failed", res, err)
			}
			if r.calls != 0 {
				t.Fatalf("reconcile called %d times for a new key; want none", r.calls)
			}
			res, err := g.Do(context.Background(), "k", []byte("p"), effect, idem.Reconcile(r.fn))
			if res.Outcome != tc.want || runs != tc.wantRuns || r.calls != 1 || string(res.Value) != tc.value {
				t.Fatalf("after an unknown outcome: %+v, %v, runs %d, reconciles %d; want %s, %d runs, 1 reconcile, value %q",
					res, err, runs, r.calls, tc.want, tc.wantRuns, tc.value)
			}
			if (err == nil) != (tc.want != idem.Held) || (tc.want == idem.Held && !errors.Is(err, idem.ErrHeld)) {
				t.Fatalf("error %v for %s", err, tc.want)
			}
			// Whatever it became, a copy runs nothing more.
			res, err = g.Do(context.Background(), "k", []byte("p"), effect, idem.Reconcile(r.fn))
			if runs != tc.wantRuns || r.calls != 1 {
				t.Fatalf("copy: %+v, %v, runs %d, reconciles %d", res, err, runs, r.calls)
			}
			rec, _, _ := store.Get(context.Background(), g.StorageKey("k"))
			switch tc.want {
			case idem.Held:
				if res.Outcome != idem.Held || rec.Status != idem.StatusHeld || !rec.ExpiresAt.IsZero() || rec.LastError == "" {
					t.Fatalf("copy of a held key: %+v; record %+v: want Held, HELD without expiry, with a reason", res, rec)
				}
			default:
				if res.Outcome != idem.Duplicate || string(res.Value) != tc.value || rec.Status != idem.StatusCompleted {
					t.Fatalf("copy: %+v; record %+v: want a Duplicate of %q", res, rec, tc.value)
				}
			}
		})
	}
}

// TestDefiniteFailureIsNotReconciled: a failure the effect declares
// definite releases FAILED, and the next attempt runs at once.
func TestDefiniteFailureIsNotReconciled(t *testing.T) {
	store := idemtest.NewMemoryStore()
	g := mustGuard(t, store, idem.WithUnknownOutcome(idem.Hold))
	runs := 0
	r := reconciler{applied: true}
	refused := idem.Definite(errors.New("422 invalid phone number"))
	_, _ = g.Do(context.Background(), "k", nil, failOnce(refused, &runs), idem.Reconcile(r.fn))
	rec, _, _ := store.Get(context.Background(), g.StorageKey("k"))
	if rec.Status != idem.StatusFailed {
		t.Fatalf("record after a definite failure: %+v; want FAILED", rec)
	}
	res, err := g.Do(context.Background(), "k", nil, failOnce(refused, &runs), idem.Reconcile(r.fn))
	if err != nil || res.Outcome != idem.Executed || runs != 2 || r.calls != 0 {
		t.Fatalf("after a definite failure: %+v, %v, runs %d, reconciles %d; want Executed, no reconcile", res, err, runs, r.calls)
	}
}

// TestNeverDefinite: an error marked definite that is the end of a
// context or a broken connection is not: the request may have been
// applied.
func TestNeverDefinite(t *testing.T) {
	for _, err := range []error{
		idem.Definite(context.DeadlineExceeded),
		idem.Definite(fmt.Errorf("post: %w", context.Canceled)),
		idem.Definite(fmt.Errorf("read: %w", syscall.ECONNRESET)),
		idem.Definite(io.ErrUnexpectedEOF),
		errors.New("plain"),
	} {
		if idem.IsDefinite(err) {
			t.Errorf("IsDefinite(%v) = true", err)
		}
	}
	if !idem.IsDefinite(fmt.Errorf("sms: %w", idem.Definite(errors.New("400")))) {
		t.Error("a wrapped Definite is not definite")
	}
}

// TestLapsedLeaseIsReconciled: an attempt that died after its call (its
// lease ran out IN_PROGRESS), or whose effect panicked, is an unknown
// outcome too.
func TestLapsedLeaseIsReconciled(t *testing.T) {
	clock := idemtest.NewClock(time.Now())
	store := idemtest.NewMemoryStore()
	g := mustGuard(t, store, idem.WithClock(clock.Now), idem.WithLease(10*time.Second), idem.WithSafetyMargin(time.Second),
		idem.WithUnknownOutcome(idem.Hold))
	// Another process took the key and died.
	now := clock.Now()
	if _, ok, err := store.Acquire(context.Background(), idem.Acquisition{Key: g.StorageKey("k"), Lease: "dead",
		LeaseUntil: now.Add(10 * time.Second), ExpiresAt: now.Add(time.Hour), Now: now}); !ok || err != nil {
		t.Fatalf("acquire: %v, %v", ok, err)
	}
	clock.Advance(11 * time.Second)
	r := reconciler{applied: true, result: "paid"}
	res, err := g.Do(context.Background(), "k", nil, ok("again"), idem.Reconcile(r.fn))
	if err != nil || res.Outcome != idem.Reconciled || string(res.Value) != "paid" || r.calls != 1 {
		t.Fatalf("after a lapsed lease: %+v, %v, reconciles %d; want Reconciled", res, err, r.calls)
	}

	func() {
		defer func() { _ = recover() }()
		_, _ = g.Do(context.Background(), "p", nil, func(context.Context) ([]byte, error) { panic("mid-call") })
	}()
	r = reconciler{err: errors.New("cannot tell")}
	if res, err := g.Do(context.Background(), "p", nil, ok("again"), idem.Reconcile(r.fn)); res.Outcome != idem.Held || !errors.Is(err, idem.ErrHeld) {
		t.Fatalf("after a panic, cannot tell, Hold: %+v, %v; want Held", res, err)
	}
}

// TestReconcileOnlyAfterAnUnknownOutcome: a new key costs one request and
// no reconcile, as without it.
func TestReconcileOnlyAfterAnUnknownOutcome(t *testing.T) {
	store := newRecordingStore()
	g := mustGuard(t, store, idem.WithUnknownOutcome(idem.Hold))
	r := reconciler{applied: true}
	for i := range 3 {
		if res, err := g.Do(context.Background(), fmt.Sprint("k", i), nil, ok("v"), idem.Reconcile(r.fn)); err != nil || res.Outcome != idem.Executed {
			t.Fatalf("%+v, %v", res, err)
		}
	}
	if r.calls != 0 || store.count() != 3 {
		t.Fatalf("3 new keys: %d reconciles, %d acquires; want 0 and 3", r.calls, store.count())
	}
}

// TestReconcilePanicCannotTell: a reconcile that panics could not tell.
func TestReconcilePanicCannotTell(t *testing.T) {
	store := idemtest.NewMemoryStore()
	g := mustGuard(t, store, idem.WithUnknownOutcome(idem.Hold))
	runs := 0
	_, _ = g.Do(context.Background(), "k", nil, failOnce(errTimeout, &runs))
	res, err := g.Do(context.Background(), "k", nil, failOnce(errTimeout, &runs),
		idem.Reconcile(func(context.Context) (bool, []byte, error) { panic("nil client") }))
	if res.Outcome != idem.Held || !errors.Is(err, idem.ErrHeld) || runs != 1 {
		t.Fatalf("reconcile panicked: %+v, %v, runs %d; want Held, nothing run", res, err, runs)
	}
}

func TestUnknownPolicyOption(t *testing.T) {
	if _, err := idem.New(idemtest.NewMemoryStore(), "ns", idem.WithUnknownOutcome(idem.UnknownPolicy(7))); !errors.Is(err, idem.ErrInvalid) {
		t.Fatalf("policy 7: %v; want ErrInvalid", err)
	}
	if idem.Hold.String() != "hold" || idem.Retry.String() != "retry" {
		t.Fatal("policy names")
	}
}

// TestDefiniteFailureAfterAnUnknownOutcome: an attempt that took over an
// unknown outcome it could not reconcile, and whose own call was refused,
// leaves the outcome unknown (UNKNOWN, not FAILED): the refusal says
// nothing of the earlier call, which may have been applied. The next
// attempt reconciles again instead of running the effect at once (found
// by the simulator: applied, reply lost; cannot tell, refused, FAILED;
// run again without reconciling: twice).
func TestDefiniteFailureAfterAnUnknownOutcome(t *testing.T) {
	store := idemtest.NewMemoryStore()
	g := mustGuard(t, store)
	ctx := context.Background()
	runs := 0
	effect := func(context.Context) ([]byte, error) {
		runs++
		if runs == 1 {
			return nil, errTimeout // applied; the reply lost
		}
		return nil, idem.Definite(errors.New("409 refused: duplicate"))
	}
	r := reconciler{err: errors.New("lookup 503")}
	_, _ = g.Do(ctx, "k", nil, effect, idem.Reconcile(r.fn))
	res, err := g.Do(ctx, "k", nil, effect, idem.Reconcile(r.fn))
	if res.Outcome != idem.Failed || err == nil || runs != 2 {
		t.Fatalf("cannot tell, then refused: %+v, %v, runs %d; want Failed after the second run", res, err, runs)
	}
	if rec, _, _ := store.Get(ctx, g.StorageKey("k")); rec.Status != idem.StatusUnknown {
		t.Fatalf("record %s; want UNKNOWN: the first call's outcome is still unknown", rec.Status)
	}
	r = reconciler{applied: true, result: "sms-1"}
	res, err = g.Do(ctx, "k", nil, effect, idem.Reconcile(r.fn))
	if err != nil || res.Outcome != idem.Reconciled || runs != 2 || r.calls != 1 {
		t.Fatalf("next attempt: %+v, %v, runs %d, reconciles %d; want Reconciled, nothing run", res, err, runs, r.calls)
	}
	// A definite failure after a reconcile that answered "not applied" is
	// a plain failure: FAILED, the next attempt runs at once.
	_, _ = g.Do(ctx, "k2", nil, failOnce(errTimeout, new(int)), idem.Reconcile(r.fn))
	notApplied := reconciler{}
	refused := idem.Definite(errors.New("422"))
	_, _ = g.Do(ctx, "k2", nil, func(context.Context) ([]byte, error) { return nil, refused }, idem.Reconcile(notApplied.fn))
	if rec, _, _ := store.Get(ctx, g.StorageKey("k2")); rec.Status != idem.StatusFailed {
		t.Fatalf("refused after a reconcile said not applied: %s; want FAILED", rec.Status)
	}
}

// leaseLostOnHold is a store whose hold meets a takeover.
type leaseLostOnHold struct{ idem.Store }

func (s leaseLostOnHold) Release(ctx context.Context, key, lease string, r idem.Released) error {
	if r.Status == idem.StatusHeld {
		return fmt.Errorf("memory: release %s: %w", key, idem.ErrLeaseLost)
	}
	return s.Store.Release(ctx, key, lease, r)
}

// TestHoldAfterATakeover: an attempt that outlived its lease and finds
// the record taken over when it parks it reports LeaseLost, not a store
// failure (found by the simulator).
func TestHoldAfterATakeover(t *testing.T) {
	store := leaseLostOnHold{idemtest.NewMemoryStore()}
	g := mustGuard(t, store, idem.WithUnknownOutcome(idem.Hold))
	ctx := context.Background()
	runs := 0
	_, _ = g.Do(ctx, "k", nil, failOnce(errTimeout, &runs))
	res, err := g.Do(ctx, "k", nil, failOnce(errTimeout, &runs))
	if res.Outcome != idem.LeaseLost || !errors.Is(err, idem.ErrLeaseLost) || errors.Is(err, idem.ErrStore) || runs != 1 {
		t.Fatalf("hold after a takeover: %+v, %v, runs %d; want LeaseLost (not ErrStore), nothing run", res, err, runs)
	}
}
