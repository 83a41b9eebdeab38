package idemtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// The subtests of a release sent again after the record moved on: a FAILED
// record may be taken at once, so between a release that landed and its
// retry (its response lost) another attempt can take the record. The retry
// must still be the caller's own (nil), and the new holder's record
// untouched; a release that never landed, whose record was taken from a
// lapsed lease or an expired receipt, stays lease lost.

// releaseRetriedAfterTakeover: the release lands, another lease takes the
// FAILED record, and the same release sent again succeeds without writing.
func (s *suite) releaseRetriedAfterTakeover(t *testing.T, store idem.Store) {
	ctx := context.Background()
	a := acquisition("mine")
	if _, ok, err := takeLease(ctx, store, a); err != nil || !ok {
		t.Fatalf("Acquire: %v, %v", ok, err)
	}
	if err := store.Release(ctx, a.Key, a.Lease, idem.Released{Status: idem.StatusFailed, Reason: "why", Now: a.Now}); err != nil {
		t.Fatalf("Release: %v", err)
	}
	b := a
	b.Lease, b.Now = "theirs", a.Now.Add(time.Second)
	if rec, ok, err := takeLease(ctx, store, b); err != nil || !ok || rec.Attempts != 2 {
		t.Fatalf("Acquire of the released record: %+v, %v, %v; want acquired on attempt 2", rec, ok, err)
	}
	if err := store.Release(ctx, a.Key, a.Lease, idem.Released{Status: idem.StatusFailed, Reason: "why", Now: a.Now}); err != nil {
		t.Fatalf("the same Release sent again after another lease took the record: %v; want nil (the caller's own release)", err)
	}
	if rec, ok := s.record(t, store, a.Key); ok &&
		(rec.Status != idem.StatusInProgress || rec.Lease != "theirs" || rec.Attempts != 2 || rec.LastError != "why" || rec.PrevStatus != idem.StatusFailed) {
		t.Fatalf("new holder's record after the retried Release: %+v; want it as its acquire left it (IN_PROGRESS, lease theirs, attempt 2, the FAILED record's last error)", rec)
	}
	c := b
	c.Lease, c.Now = "third", b.Now.Add(time.Second)
	if rec, ok, err := store.Acquire(ctx, c); err != nil || ok || rec.Status != idem.StatusInProgress || rec.Lease != "theirs" {
		t.Fatalf("Acquire while the new holder runs: %+v, acquired %v, %v; want its live lease in the way", rec, ok, err)
	}
	done := idem.Completion{Result: []byte("theirs"), ExpiresAt: b.ExpiresAt, Now: b.Now}
	if err := store.Complete(ctx, a.Key, "theirs", done); err != nil {
		t.Fatalf("the new holder's Complete: %v", err)
	}
	if err := store.Release(ctx, a.Key, a.Lease, idem.Released{Status: idem.StatusFailed, Reason: "why", Now: a.Now}); err != nil {
		t.Fatalf("the same Release sent again after the new holder completed: %v; want nil", err)
	}
	if rec, _, err := store.Acquire(ctx, c); err != nil || rec.Status != idem.StatusCompleted || string(rec.Result) != "theirs" {
		t.Fatalf("Acquire after the new holder completed: %+v, %v; want its receipt", rec, err)
	}

	// Through the Guard: the effect's error alone, never lease lost.
	g := newGuard(t, releaseTakenBeforeRetry{store})
	boom := errors.New("boom")
	res, err := g.Do(ctx, unique("order"), []byte("p"), func(context.Context) ([]byte, error) { return nil, boom })
	if !errors.Is(err, boom) || errors.Is(err, idem.ErrLeaseLost) || res.Outcome != idem.Failed {
		t.Fatalf("Do whose release was sent again after a takeover: %+v, %v; want Failed with the effect's error only", res, err)
	}
}

// releaseTakenBeforeRetry sends every Release twice, as a client does that
// retries a request whose response was lost, and in between lets another
// attempt take the FAILED record the first one left.
type releaseTakenBeforeRetry struct{ idem.Store }

func (r releaseTakenBeforeRetry) Release(ctx context.Context, key, lease string, rel idem.Released) error {
	if err := r.Store.Release(ctx, key, lease, rel); err != nil {
		return err
	}
	now := rel.Now
	other := idem.Acquisition{Key: key, Lease: unique("other"), LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour), Now: now}
	if _, ok, err := r.Store.Acquire(ctx, other); err != nil || !ok {
		return errors.Join(errors.New("idemtest: another attempt could not take the released record"), err)
	}
	return r.Store.Release(ctx, key, lease, rel)
}

// releaseAfterTakeover: a release that did not land before another attempt
// took the record — from a lapsed lease, from a receipt that expired — is
// lease lost, and writes nothing.
func (s *suite) releaseAfterTakeover(t *testing.T, store idem.Store) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// leave is what the first attempt leaves before the takeover, and
		// when the takeover may happen.
		leave func(a idem.Acquisition) time.Time
	}{
		{"lapsed lease", func(a idem.Acquisition) time.Time { return a.LeaseUntil.Add(time.Second) }},
		{"expired receipt", func(a idem.Acquisition) time.Time {
			done := idem.Completion{ExpiresAt: a.Now.Add(2 * time.Minute), Now: a.Now}
			if err := store.Complete(ctx, a.Key, a.Lease, done); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			return done.ExpiresAt.Add(time.Second)
		}},
	} {
		a := acquisition("mine")
		if _, ok, err := takeLease(ctx, store, a); err != nil || !ok {
			t.Fatalf("%s: Acquire: %v, %v", tc.name, ok, err)
		}
		b := a
		b.Lease, b.Now = "theirs", tc.leave(a)
		b.LeaseUntil, b.ExpiresAt = b.Now.Add(time.Minute), b.Now.Add(time.Hour)
		if _, ok, err := takeLease(ctx, store, b); err != nil || !ok {
			t.Fatalf("%s: takeover: %v, %v; want acquired", tc.name, ok, err)
		}
		if err := store.Release(ctx, a.Key, a.Lease, idem.Released{Status: idem.StatusFailed, Reason: "why", Now: b.Now}); !errors.Is(err, idem.ErrLeaseLost) {
			t.Fatalf("%s: Release after another lease took the record over: %v; want ErrLeaseLost", tc.name, err)
		}
		if rec, ok := s.record(t, store, a.Key); ok && (rec.Status != idem.StatusInProgress || rec.Lease != "theirs" || rec.LastError != "") {
			t.Fatalf("%s: the new holder's record after a foreign Release: %+v; want it untouched", tc.name, rec)
		}
	}
}

// releaseRetriedAfterTakeoverAndRelease: a release sent again after the
// next attempt took the record it left and released it too (a poison
// message, failing on every delivery) is still the caller's own: the
// record names the lease its last acquire took over. One more takeover
// and release, and the store can no longer tell: lease lost.
func (s *suite) releaseRetriedAfterTakeoverAndRelease(t *testing.T, store idem.Store) {
	ctx := context.Background()
	a := acquisition("first")
	release := func(lease string) error {
		return store.Release(ctx, a.Key, lease, idem.Released{Status: idem.StatusUnknown, Reason: "boom", Now: a.Now})
	}
	if _, ok, err := takeLease(ctx, store, a); err != nil || !ok {
		t.Fatalf("Acquire: %v, %v", ok, err)
	}
	if err := release("first"); err != nil {
		t.Fatalf("Release: %v", err)
	}
	for i, next := range []string{"second", "third"} {
		b := a
		b.Lease, b.Now = next, a.Now.Add(time.Duration(i+1)*time.Second)
		if _, ok, err := takeLease(ctx, store, b); err != nil || !ok {
			t.Fatalf("Acquire by %s: %v, %v", next, ok, err)
		}
		if err := release(next); err != nil {
			t.Fatalf("Release by %s: %v", next, err)
		}
		err := release("first")
		switch {
		case i == 0 && err != nil:
			t.Fatalf("the first Release sent again after the next attempt took the record and released it: %v; want nil", err)
		case i == 1 && !errors.Is(err, idem.ErrLeaseLost):
			t.Fatalf("the first Release sent again after two more attempts: %v; want ErrLeaseLost (beyond what a record keeps)", err)
		}
	}
	if rec, ok := s.record(t, store, a.Key); ok && (rec.Lease != "third" || rec.Status != idem.StatusUnknown || rec.Attempts != 3) {
		t.Fatalf("record %+v; want the third attempt's release, untouched by the retries", rec)
	}
}
