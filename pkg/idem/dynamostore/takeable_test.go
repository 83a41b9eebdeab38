package dynamostore

import (
	"context"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

// What Acquire (and Commit, "on the same condition") takes, by the status
// of the record in the way and whether it expired, as the Store contract
// (pkg/idem/store.go) says: an absent, expired, FAILED or UNKNOWN record,
// or an IN_PROGRESS one whose lease ran out; never a HELD one (it has no
// expiry: "expired" is then past the expiry it had before it was held).
// What it took over is reported as PrevStatus, "" for an expired record
// (it counts as absent). Each record is left by the store's own writes; the
// table is checked on idemtest's MemoryStore too, the reference.
func TestTakeableByStatus(t *testing.T) {
	const (
		expiresAfter = time.Hour // the seed's expiry
		fresh        = 30 * time.Minute
		expired      = 2 * time.Hour
		lapsedLease  = time.Minute   // before fresh
		liveLease    = 3 * time.Hour // after expired
		noLease      = lapsedLease   // the record is released or complete: no matter
	)
	tests := []struct {
		name  string
		seed  idem.Status // "" for none
		lease time.Duration
		at    time.Duration // the acquire's Now, after the seed's
		taken bool
		prev  idem.Status
		inWay idem.Status // the status returned when not taken
	}{
		{"absent", "", noLease, fresh, true, "", ""},
		{"COMPLETED", idem.StatusCompleted, noLease, fresh, false, "", idem.StatusCompleted},
		{"COMPLETED expired", idem.StatusCompleted, noLease, expired, true, "", ""},
		{"FAILED", idem.StatusFailed, noLease, fresh, true, idem.StatusFailed, ""},
		{"FAILED expired", idem.StatusFailed, noLease, expired, true, "", ""},
		{"UNKNOWN", idem.StatusUnknown, noLease, fresh, true, idem.StatusUnknown, ""},
		{"UNKNOWN expired", idem.StatusUnknown, noLease, expired, true, "", ""},
		{"HELD", idem.StatusHeld, noLease, fresh, false, "", idem.StatusHeld},
		{"HELD past its old expiry", idem.StatusHeld, noLease, expired, false, "", idem.StatusHeld},
		{"IN_PROGRESS live lease", idem.StatusInProgress, liveLease, fresh, false, "", idem.StatusInProgress},
		{"IN_PROGRESS live lease expired", idem.StatusInProgress, liveLease, expired, true, "", ""},
		{"IN_PROGRESS lapsed lease", idem.StatusInProgress, lapsedLease, fresh, true, idem.StatusInProgress, ""},
		{"IN_PROGRESS lapsed lease expired", idem.StatusInProgress, lapsedLease, expired, true, "", ""},
	}
	stores := []struct {
		name string
		new  func(t *testing.T) txGetter
	}{
		{"dynamostore on fakeDB", func(t *testing.T) txGetter {
			s, err := New(newFakeDB(t, fakeTableSpec{"receipts", "pk", ""}), "receipts")
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
		{"idemtest.MemoryStore (reference)", func(*testing.T) txGetter { return idemtest.NewMemoryStore() }},
	}
	ctx := context.Background()
	for _, st := range stores {
		for _, tc := range tests {
			t.Run(st.name+"/"+tc.name, func(t *testing.T) {
				for _, op := range []string{"Acquire", "Commit"} {
					store := st.new(t)
					key := "ns#" + op
					seed := idem.Acquisition{Key: key, Lease: "seed", LeaseUntil: t0.Add(tc.lease), ExpiresAt: t0.Add(expiresAfter), Now: t0}
					if tc.seed != "" {
						leave(t, store, seed, tc.seed)
					}
					now := t0.Add(tc.at)
					var (
						rec   idem.Record
						taken bool
						err   error
					)
					if op == "Acquire" {
						rec, taken, err = store.Acquire(ctx, idem.Acquisition{Key: key, Lease: "next", LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour), Now: now})
					} else {
						rec, taken, err = store.Commit(ctx, idem.Transaction{Key: key, Token: "next", ExpiresAt: now.Add(time.Hour), Now: now, Result: []byte("r")})
					}
					if err != nil {
						t.Fatalf("%s at +%s, record %s: %v; want taken %v", op, tc.at, tc.name, err, tc.taken)
					}
					attempts := 1
					if tc.seed != "" {
						attempts = 2
					}
					switch {
					case taken != tc.taken:
						t.Fatalf("%s at +%s, record %s: taken %v (%+v), want %v", op, tc.at, tc.name, taken, rec, tc.taken)
					case taken && (rec.Lease != "next" || rec.Attempts != attempts):
						t.Fatalf("%s: took %+v, want lease next, attempt %d", op, rec, attempts)
					case taken && op == "Acquire" && rec.PrevStatus != tc.prev:
						t.Fatalf("Acquire at +%s, record %s: PrevStatus %q, want %q", tc.at, tc.name, rec.PrevStatus, tc.prev)
					case !taken && (rec.Status != tc.inWay || rec.Lease != "seed"):
						t.Fatalf("%s: in the way %+v, want the %s record of lease seed", op, rec, tc.inWay)
					}
					stored, found, err := store.Get(ctx, key)
					want := map[bool]string{true: "next", false: "seed"}[taken]
					if err != nil || !found || stored.Lease != want || stored.Attempts != rec.Attempts {
						t.Fatalf("%s: stored %+v, %v, %v; want the record of lease %s, attempt %d", op, stored, found, err, want, rec.Attempts)
					}
				}
			})
		}
	}
}

// txGetter is what TestTakeableByStatus needs of a store.
type txGetter interface {
	idem.TxStore
	Get(ctx context.Context, key string) (idem.Record, bool, error)
}

// leave takes a's record and leaves it in status st by the store's own
// writes: held (IN_PROGRESS), completed, or released.
func leave(t *testing.T, store idem.Store, a idem.Acquisition, st idem.Status) {
	t.Helper()
	ctx := context.Background()
	if _, ok, err := store.Acquire(ctx, a); err != nil || !ok {
		t.Fatalf("seed Acquire: %v, %v", ok, err)
	}
	var err error
	switch st {
	case idem.StatusInProgress:
	case idem.StatusCompleted:
		err = store.Complete(ctx, a.Key, a.Lease, idem.Completion{Result: []byte("done"), ExpiresAt: a.ExpiresAt, Now: a.Now})
	default:
		err = store.Release(ctx, a.Key, a.Lease, idem.Released{Status: st, Reason: "seeded", Now: a.Now})
	}
	if err != nil {
		t.Fatalf("seed %s: %v", st, err)
	}
}
