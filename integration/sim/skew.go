package sim

import (
	"context"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// skewed is the Store a process's Guard uses: the real store shared by the
// world, with the times the process writes shifted by its clock skew (and
// the times it reads shifted back), as a server sees the times of a
// machine whose clock runs ahead or behind. Inside the process every clock
// agrees: its Guard, its contexts' deadlines and its timers all run on the
// bubble's time. Every call is noted for the oracle.
type skewed struct {
	idem.Store
	w *world
	p *process
}

var _ idem.TxStore = (*skewed)(nil)

func shift(t time.Time, d time.Duration) time.Time {
	if t.IsZero() {
		return t
	}
	return t.Add(d)
}

func unshift(r idem.Record, d time.Duration) idem.Record {
	r.LeaseUntil, r.ExpiresAt, r.UpdatedAt = shift(r.LeaseUntil, -d), shift(r.ExpiresAt, -d), shift(r.UpdatedAt, -d)
	return r
}

func (s *skewed) Acquire(ctx context.Context, a idem.Acquisition) (idem.Record, bool, error) {
	d := s.p.skew
	a.Now, a.LeaseUntil, a.ExpiresAt = shift(a.Now, d), shift(a.LeaseUntil, d), shift(a.ExpiresAt, d)
	actor := s.w.actorOf(ctx)
	s.w.check.acquiring(ctx, actor, s.p, a)
	rec, ok, err := s.Store.Acquire(ctx, a)
	s.w.check.acquired(ctx, actor, a, rec, ok, err)
	if !ok && err == nil && rec.Status == idem.StatusCompleted {
		s.p.answered(actor) // the Guard caches the receipt in its way
	}
	return unshift(rec, d), ok, err
}

func (s *skewed) Complete(ctx context.Context, key, lease string, c idem.Completion) error {
	c.Now, c.ExpiresAt = shift(c.Now, s.p.skew), shift(c.ExpiresAt, s.p.skew)
	actor := s.w.actorOf(ctx)
	s.w.check.writing(actor, lease)
	err := s.Store.Complete(ctx, key, lease, c)
	s.w.check.completed(actor, key, lease, err)
	s.p.answered(actor) // the Guard caches the receipt, or owes it
	return err
}

func (s *skewed) Release(ctx context.Context, key, lease string, r idem.Released) error {
	actor := s.w.actorOf(ctx)
	s.w.check.writing(actor, lease)
	r.Now = shift(r.Now, s.p.skew)
	err := s.Store.Release(ctx, key, lease, r)
	s.w.check.released(actor, key, lease, err)
	return err
}

func (s *skewed) Commit(ctx context.Context, t idem.Transaction) (idem.Record, bool, error) {
	d := s.p.skew
	t.Now, t.ExpiresAt = shift(t.Now, d), shift(t.ExpiresAt, d)
	actor := s.w.actorOf(ctx)
	s.w.check.committing(ctx, actor, s.p, t)
	rec, ok, err := s.Store.(idem.TxStore).Commit(ctx, t)
	s.w.check.committed(ctx, actor, t, rec, ok, err)
	s.p.answered(actor) // the Guard caches the receipt, its own or the one in its way
	return unshift(rec, d), ok, err
}
