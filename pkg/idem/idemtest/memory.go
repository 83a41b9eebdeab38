package idemtest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// MemoryMaxResultSize is the largest result a MemoryStore keeps, as a real
// store has a limit too; a larger one is refused with idem.ErrResultTooLarge.
const MemoryMaxResultSize = 4 << 20

// MemoryStore is an in-memory [idem.Store] and [idem.TxStore] with the same
// semantics as dynamostore: expiry, leases, fencing, FAILED records and
// transactions. Transactional writes of any type are accepted and appended,
// in commit order, to a log read with [MemoryStore.Writes].
//
// It is safe for concurrent use. It is for tests and single-process tools:
// its records die with the process.
type MemoryStore struct {
	mu      sync.Mutex
	records map[string]entry
	writes  []any
}

// entry is a record, the lease of the last attempt whose release landed
// on it (which the acquires and commits that take the record after it
// keep), and the lease of the record the last acquire took over: a release
// sent again after another attempt took the FAILED or UNKNOWN record it
// left finds its own lease in one of them (see Release).
type entry struct {
	idem.Record
	released  string
	prevLease string
}

var (
	_ idem.Store   = (*MemoryStore)(nil)
	_ idem.TxStore = (*MemoryStore)(nil)
)

// NewMemoryStore returns an empty store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{records: make(map[string]entry)}
}

// Capabilities implements idem.Store: transactions, results up to
// MemoryMaxResultSize, and every storage key a Guard makes.
func (s *MemoryStore) Capabilities() idem.Capabilities {
	return idem.Capabilities{Transactions: true, MaxResultSize: MemoryMaxResultSize, MaxKeySize: idem.MaxStorageKeyLen}
}

// takeable is the condition of Acquire and Commit, as in dynamostore.
func takeable(rec idem.Record, ok bool, now time.Time) bool {
	return !ok || isExpired(rec, now) ||
		rec.Status == idem.StatusFailed || rec.Status == idem.StatusUnknown ||
		(rec.Status == idem.StatusInProgress && rec.LeaseUntil.Before(now))
}

// isExpired reports whether rec counts as absent at now: it has an
// expiry, and now is past it (a HELD record has none).
func isExpired(rec idem.Record, now time.Time) bool {
	return !rec.ExpiresAt.IsZero() && rec.ExpiresAt.Before(now)
}

// Acquire implements idem.Store.
func (s *MemoryStore) Acquire(ctx context.Context, a idem.Acquisition) (idem.Record, bool, error) {
	if err := ctx.Err(); err != nil {
		return idem.Record{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.records[a.Key]
	if !takeable(old.Record, ok, a.Now) {
		return clone(old.Record), false, nil
	}
	rec := idem.Record{
		Key:         a.Key,
		Status:      idem.StatusInProgress,
		Lease:       a.Lease,
		LeaseUntil:  a.LeaseUntil,
		ExpiresAt:   a.ExpiresAt,
		Attempts:    old.Attempts + 1,
		Fingerprint: a.Fingerprint,
		UpdatedAt:   a.Now,
		LastError:   old.LastError,
		PrevStatus:  old.Status,
	}
	if ok && isExpired(old.Record, a.Now) {
		rec.PrevStatus = "" // an expired record counts as absent
	}
	s.records[a.Key] = entry{Record: rec, released: old.released, prevLease: old.Lease}
	return clone(rec), true, nil
}

// Complete implements idem.Store.
func (s *MemoryStore) Complete(ctx context.Context, key, lease string, c idem.Completion) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(c.Result) > MemoryMaxResultSize {
		return fmt.Errorf("complete %q: %d bytes: %w", key, len(c.Result), idem.ErrResultTooLarge)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.records[key]
	if !ok || rec.Lease != lease {
		return fmt.Errorf("complete %q: %w", key, idem.ErrLeaseLost)
	}
	rec.Status = idem.StatusCompleted
	rec.Result = slices.Clone(c.Result)
	rec.ResultOmitted = c.ResultOmitted
	rec.ExpiresAt = c.ExpiresAt
	rec.UpdatedAt = c.Now
	rec.LastError = ""
	s.records[key] = rec
	return nil
}

// Release implements idem.Store. A release sent again after another
// attempt took the FAILED or UNKNOWN record it left is the caller's own,
// and nil.
func (s *MemoryStore) Release(ctx context.Context, key, lease string, r idem.Released) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.records[key]
	switch {
	case ok && rec.Lease == lease:
	case ok && (rec.released == lease || rec.prevLease == lease && released(rec.PrevStatus)):
		// This very release landed, another attempt took the record it
		// left (and may have released it too), and the release was sent
		// again: it is done.
		return nil
	default:
		return fmt.Errorf("release %q: %w", key, idem.ErrLeaseLost)
	}
	rec.Status = r.Status
	rec.LastError = r.Reason
	rec.UpdatedAt = r.Now
	rec.released = lease
	if r.Status == idem.StatusHeld {
		rec.ExpiresAt = time.Time{}
	}
	s.records[key] = rec
	return nil
}

// Commit implements idem.TxStore.
func (s *MemoryStore) Commit(ctx context.Context, t idem.Transaction) (idem.Record, bool, error) {
	if err := ctx.Err(); err != nil {
		return idem.Record{}, false, err
	}
	if len(t.Result) > MemoryMaxResultSize {
		return idem.Record{}, false, fmt.Errorf("commit %q: %d bytes: %w", t.Key, len(t.Result), idem.ErrResultTooLarge)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.records[t.Key]
	if !takeable(old.Record, ok, t.Now) {
		return clone(old.Record), old.Status == idem.StatusCompleted && old.Lease == t.Token, nil
	}
	rec := idem.Record{
		Key:           t.Key,
		Status:        idem.StatusCompleted,
		Lease:         t.Token,
		ExpiresAt:     t.ExpiresAt,
		Attempts:      old.Attempts + 1,
		Fingerprint:   t.Fingerprint,
		Result:        slices.Clone(t.Result),
		ResultOmitted: t.ResultOmitted,
		UpdatedAt:     t.Now,
	}
	s.records[t.Key] = entry{Record: rec, released: old.released}
	s.writes = append(s.writes, t.Writes...)
	return clone(rec), true, nil
}

// Get returns the record stored under the storage key (see
// idem.Guard.StorageKey), expired or not.
func (s *MemoryStore) Get(ctx context.Context, key string) (idem.Record, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.records[key]
	return clone(rec.Record), ok, nil
}

// Writes returns the transactional writes committed so far, in order.
func (s *MemoryStore) Writes() []any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.writes)
}

func clone(r idem.Record) idem.Record {
	r.Result = slices.Clone(r.Result)
	return r
}

// released reports whether a record taken over in status st had been
// released (so its lease's release had landed).
func released(st idem.Status) bool { return st == idem.StatusFailed || st == idem.StatusUnknown }
