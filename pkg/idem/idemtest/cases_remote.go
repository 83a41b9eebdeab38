package idemtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// The store's side of remote effects: an acquire says what it took over,
// an UNKNOWN record is taken like a FAILED one, a HELD one never is and
// does not expire.

// takeoverReported: the record an acquire writes carries the status of
// the record it took over, and its last error.
func (s *suite) takeoverReported(t *testing.T, store idem.Store) {
	ctx := context.Background()
	a := acquisition("first")
	rec, ok, err := takeLease(ctx, store, a)
	if err != nil || !ok || rec.PrevStatus != "" || rec.LastError != "" {
		t.Fatalf("Acquire of an absent record: %+v, %v, %v; want nothing taken over", rec, ok, err)
	}
	for i, st := range []idem.Status{idem.StatusUnknown, idem.StatusFailed} {
		reason := "reason-" + string(st)
		if err := store.Release(ctx, a.Key, a.Lease, idem.Released{Status: st, Reason: reason, Now: a.Now}); err != nil {
			t.Fatalf("Release %s: %v", st, err)
		}
		next := a
		next.Lease = a.Lease + "-next"
		rec, ok, err := takeLease(ctx, store, next)
		if err != nil || !ok {
			t.Fatalf("Acquire of a %s record: %+v, %v, %v; want it taken", st, rec, ok, err)
		}
		if rec.PrevStatus != st || rec.LastError != reason || rec.Attempts != i+2 {
			t.Fatalf("Acquire of a %s record: %+v; want PrevStatus %s, its LastError %q kept, attempt %d", st, rec, st, reason, i+2)
		}
		a = next
	}
	// A lease that ran out.
	later := a
	later.Lease, later.Now = "later", a.LeaseUntil.Add(time.Millisecond)
	later.LeaseUntil, later.ExpiresAt = later.Now.Add(time.Minute), later.Now.Add(time.Hour)
	rec, ok, err = takeLease(ctx, store, later)
	if err != nil || !ok || rec.PrevStatus != idem.StatusInProgress {
		t.Fatalf("Acquire past a lease: %+v, %v, %v; want IN_PROGRESS taken over", rec, ok, err)
	}
}

// expiredUnknownIsAbsent: an UNKNOWN record, or an IN_PROGRESS one whose
// lease ran out, past its expiry counts as absent, as every record does:
// the acquire that takes it reports nothing taken over (PrevStatus ""),
// so that the Guard does not reconcile, or hold, what TTL may delete at
// any moment. (Attempts still counts on from it.)
func (s *suite) expiredUnknownIsAbsent(t *testing.T, store idem.Store) {
	ctx := context.Background()
	for _, st := range []idem.Status{idem.StatusUnknown, idem.StatusInProgress} {
		a := acquisition("gone")
		if _, ok, err := takeLease(ctx, store, a); err != nil || !ok {
			t.Fatalf("Acquire: %v, %v", ok, err)
		}
		if st == idem.StatusUnknown {
			if err := store.Release(ctx, a.Key, a.Lease, idem.Released{Status: st, Reason: "timeout", Now: a.Now}); err != nil {
				t.Fatalf("Release UNKNOWN: %v", err)
			}
		}
		next := a
		next.Lease, next.Now = "after-expiry", a.ExpiresAt.Add(time.Second)
		next.LeaseUntil, next.ExpiresAt = next.Now.Add(time.Minute), next.Now.Add(time.Hour)
		rec, ok, err := takeLease(ctx, store, next)
		if err != nil || !ok || rec.PrevStatus != "" {
			t.Fatalf("Acquire of an expired %s record: %+v, %v, %v; want it taken, PrevStatus \"\" (it counts as absent)", st, rec, ok, err)
		}
	}
}

// heldStays: a HELD record is never taken, not even after its old expiry
// or lease, and keeps no expiry.
func (s *suite) heldStays(t *testing.T, store idem.Store) {
	ctx := context.Background()
	a := acquisition("holder")
	if _, ok, err := takeLease(ctx, store, a); err != nil || !ok {
		t.Fatalf("Acquire: %v, %v", ok, err)
	}
	if err := store.Release(ctx, a.Key, a.Lease, idem.Released{Status: idem.StatusHeld, Reason: "unknown outcome", Now: a.Now}); err != nil {
		t.Fatalf("Release HELD: %v", err)
	}
	for _, at := range []time.Time{a.Now, a.LeaseUntil.Add(time.Second), a.ExpiresAt.Add(time.Hour)} {
		b := acquisition("taker")
		b.Key, b.Now = a.Key, at
		b.LeaseUntil, b.ExpiresAt = at.Add(time.Minute), at.Add(time.Hour)
		rec, ok, err := store.Acquire(ctx, b)
		if err != nil || ok || rec.Status != idem.StatusHeld || rec.Lease != a.Lease || rec.LastError != "unknown outcome" {
			t.Fatalf("Acquire of a HELD record at %s: %+v, acquired %v, %v; want the HELD record in the way", at, rec, ok, err)
		}
	}
	if rec, ok := s.record(t, store, a.Key); ok && !rec.ExpiresAt.IsZero() {
		t.Fatalf("HELD record %+v; want no expiry: nothing held is deleted silently", rec)
	}
}

// remoteThroughGuard: a Guard reconciles an unknown outcome (applied: the
// receipt, nothing run), and with Hold parks what it cannot tell.
func (s *suite) remoteThroughGuard(t *testing.T, store idem.Store) {
	ctx := context.Background()
	timeout := errors.New("POST /payments: read tcp: i/o timeout")
	g := newGuard(t, store)
	key := unique("payment")
	if _, err := g.Do(ctx, key, []byte("p"), func(context.Context) ([]byte, error) { return nil, timeout }); !errors.Is(err, timeout) {
		t.Fatalf("ambiguous failure: %v", err)
	}
	ran := false
	res, err := g.Do(ctx, key, []byte("p"), func(context.Context) ([]byte, error) { ran = true; return nil, nil },
		idem.Reconcile(func(context.Context) (bool, []byte, error) { return true, []byte("pay_1"), nil }))
	if err != nil || res.Outcome != idem.Reconciled || string(res.Value) != "pay_1" || ran {
		t.Fatalf("reconciled: %+v, %v, ran %v; want Reconciled with pay_1, nothing run", res, err, ran)
	}
	res, err = g.Do(ctx, key, []byte("p"), value("again"))
	if err != nil || res.Outcome != idem.Duplicate || string(res.Value) != "pay_1" {
		t.Fatalf("copy after the reconcile: %+v, %v; want Duplicate of pay_1", res, err)
	}

	held := newGuard(t, store, idem.WithUnknownOutcome(idem.Hold))
	key = unique("payment")
	_, _ = held.Do(ctx, key, []byte("p"), func(context.Context) ([]byte, error) { return nil, timeout })
	for i := range 2 {
		res, err = held.Do(ctx, key, []byte("p"), func(context.Context) ([]byte, error) { ran = true; return nil, nil })
		if !errors.Is(err, idem.ErrHeld) || res.Outcome != idem.Held || ran {
			t.Fatalf("copy %d of an unknown outcome, Hold: %+v, %v, ran %v; want Held, nothing run", i+1, res, err, ran)
		}
	}
	if rec, ok := s.record(t, store, held.StorageKey(key)); ok && rec.Status != idem.StatusHeld {
		t.Fatalf("record %+v; want HELD", rec)
	}
}
