package dynamostore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// Store.Resolve on fakeDB, which evaluates the conditions: what an
// operator writes, fenced by the whole record as it was read, as
// redisstore's tests check it on a redis-server.

func newResolveStore(t *testing.T) *Store {
	t.Helper()
	s, err := New(newFakeDB(t, fakeTableSpec{name: "receipts", pk: "pk"}), "receipts")
	if err != nil {
		t.Fatal(err)
	}
	s.backoff = func(int) time.Duration { return time.Millisecond }
	return s
}

// parkOn leaves key HELD, as a Guard under WithUnknownOutcome(Hold) does.
func parkOn(t *testing.T, s *Store, key string, now time.Time) idem.Record {
	t.Helper()
	a := idem.Acquisition{Key: key, Lease: "zombie", LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour), Fingerprint: "fp", Now: now}
	if _, ok, err := s.Acquire(t.Context(), a); err != nil || !ok {
		t.Fatalf("Acquire %s: %v, %v", key, ok, err)
	}
	if err := s.Release(t.Context(), key, "zombie", idem.Released{Status: idem.StatusHeld, Reason: "unknown outcome", Now: now}); err != nil {
		t.Fatal(err)
	}
	rec, _, err := s.Get(t.Context(), key)
	if err != nil || rec.Status != idem.StatusHeld {
		t.Fatalf("parked: %+v, %v", rec, err)
	}
	return rec
}

// TestResolveOnTable: a held key settled, then everything that must be
// refused: the same resolve again (another operator's, after the first
// landed), a late receipt of the attempt that held it, a copy that took
// it over; and a receipt the Guard then reports as an operator's, until
// it expires and an attempt writes its own.
func TestResolveOnTable(t *testing.T) {
	s := newResolveStore(t)
	now := t0
	expires := now.Add(7 * 24 * time.Hour)

	old := parkOn(t, s, "ns#k", now)
	rec, changed, err := s.Resolve(t.Context(), "ns#k", old, idem.StatusCompleted, expires, now.Add(time.Minute))
	if err != nil || changed || rec.Status != idem.StatusCompleted || !rec.Resolved || !rec.ResultOmitted ||
		!strings.HasPrefix(rec.Lease, resolveTokenPrefix) || rec.Attempts != old.Attempts || rec.ExpiresAt.Unix() != expires.Unix() {
		t.Fatalf("Resolve: %+v, changed %v, %v", rec, changed, err)
	}
	again, changed, err := s.Resolve(t.Context(), "ns#k", old, idem.StatusFailed, expires, now.Add(2*time.Minute))
	if err != nil || !changed || again.Lease != rec.Lease || again.Status != idem.StatusCompleted {
		t.Fatalf("a second resolve of the record as first read: %+v, changed %v, %v; want changed, the first one's receipt", again, changed, err)
	}

	// The attempt that held the record writes its late receipt under the
	// same token: a resolve fenced by the token alone would release it.
	old = parkOn(t, s, "ns#late", now)
	if err := s.Complete(t.Context(), "ns#late", "zombie", idem.Completion{Result: []byte("late"), ExpiresAt: now.Add(time.Hour), Now: now.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	if rec, changed, err := s.Resolve(t.Context(), "ns#late", old, idem.StatusFailed, expires, now.Add(time.Minute)); err != nil || !changed || string(rec.Result) != "late" {
		t.Fatalf("resolve over a late receipt: %+v, changed %v, %v; want changed, the receipt", rec, changed, err)
	}
	if rec, _, _ := s.Get(t.Context(), "ns#late"); rec.Status != idem.StatusCompleted || string(rec.Result) != "late" {
		t.Fatalf("the late receipt was overwritten: %+v", rec)
	}

	// An unconfirmed record (lease ended) that a copy takes over.
	a := idem.Acquisition{Key: "ns#copy", Lease: "zombie", LeaseUntil: now.Add(-time.Minute), ExpiresAt: now.Add(time.Hour), Now: now.Add(-2 * time.Minute)}
	old, _, err = s.Acquire(t.Context(), a)
	if err != nil {
		t.Fatal(err)
	}
	a.Lease, a.LeaseUntil, a.Now = "copy", now.Add(time.Minute), now
	if _, ok, err := s.Acquire(t.Context(), a); err != nil || !ok {
		t.Fatalf("the copy's acquire: %v, %v", ok, err)
	}
	if rec, changed, err := s.Resolve(t.Context(), "ns#copy", old, idem.StatusCompleted, expires, now); err != nil || !changed || rec.Lease != "copy" {
		t.Fatalf("resolve over a live attempt: %+v, changed %v, %v; want changed, the copy's lease", rec, changed, err)
	}

	if rec, changed, err := s.Resolve(t.Context(), "ns#gone", old, idem.StatusCompleted, expires, now); err != nil || !changed || rec.Status != "" {
		t.Fatalf("resolve of a record that is gone: %+v, changed %v, %v", rec, changed, err)
	}

	// The Guard: a Duplicate of the operator's receipt says so; once it
	// expired, the receipt an attempt writes does not.
	clock := now.Add(time.Hour)
	g, err := idem.New(s, "ns", idem.WithPlainKeys(), idem.WithClock(func() time.Time { return clock }))
	if err != nil {
		t.Fatal(err)
	}
	fn := func(context.Context) ([]byte, error) { return []byte("ran"), nil }
	if res, err := g.Do(t.Context(), "k", nil, fn); err != nil || res.Outcome != idem.Duplicate || !res.Resolved {
		t.Fatalf("a copy: %+v, %v; want a Duplicate, Resolved", res, err)
	}
	clock = expires.Add(time.Hour)
	if res, err := g.Do(t.Context(), "k", nil, fn); err != nil || res.Outcome != idem.Executed {
		t.Fatalf("after the receipt expired: %+v, %v; want Executed", res, err)
	}
	if res, err := g.Do(t.Context(), "k", nil, fn); err != nil || res.Outcome != idem.Duplicate || res.Resolved || string(res.Value) != "ran" {
		t.Fatalf("the attempt's receipt: %+v, %v; want a Duplicate of it, not Resolved", res, err)
	}
}
