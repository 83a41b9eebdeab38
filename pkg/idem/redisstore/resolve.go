package redisstore

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// What an operator writes (idemctl resolve), as dynamostore's Resolve
// writes it. The Guard never calls it.

// resolveTokenPrefix begins the lease token of a receipt written by
// Resolve. A Guard's tokens are hex, so no attempt's token has it.
const resolveTokenPrefix = "idemctl-"

// notDoneReason is the last error of a record released by Resolve to
// FAILED, for whoever reads it next.
const notDoneReason = "idemctl resolve --not-done: an operator found the effect did not happen"

// Resolve writes what an operator decided about the record under skey after
// checking downstream (idemctl resolve): to is idem.StatusCompleted (the
// effect took place: a receipt with no result, marked Resolved) or
// idem.StatusFailed (it did not: the next copy runs it). It writes only
// if the record is still exactly old — lease (the fencing token), status,
// attempts and update time — and otherwise writes nothing and returns
// changed = true with the record as it is now. A record without an
// expiry (HELD) gets expires; now is the write's time.
//
// It is one script (resolveLua), atomic on KEYS[1] alone, so it runs on
// Redis Cluster too. COMPLETED is written under a new token of Resolve's
// own, so that a late release of an attempt that outlived its lease
// cannot undo it; FAILED keeps the token, so that that attempt's late
// receipt, if it lands, stands: the effect did happen. A HELD record has
// no TTL; the settled one gets expires as its TTL (PEXPIREAT).
//
// A record that is gone is changed too: the zero Record (Status ""). A
// write that landed but whose response was lost, sent again, finds the
// record it wrote and reports it as written. Transient errors are retried
// a few times, as a Release's. With WithWaitReplicas, a write too few
// replicas acknowledged returns the record written and an error wrapping
// ErrNotReplicated.
func (s *Store) Resolve(ctx context.Context, skey string, old idem.Record, to idem.Status, expires, now time.Time) (rec idem.Record, changed bool, err error) {
	switch {
	case to != idem.StatusCompleted && to != idem.StatusFailed:
		return idem.Record{}, false, fmt.Errorf("%w: redisstore: resolve %q to %q: only COMPLETED or FAILED", idem.ErrInvalid, skey, to)
	case old.ExpiresAt.IsZero() && expires.IsZero():
		return idem.Record{}, false, fmt.Errorf("%w: redisstore: resolve %q: the record has no expiry and none was given", idem.ErrInvalid, skey)
	}
	lease := old.Lease
	if to == idem.StatusCompleted {
		lease = resolveTokenPrefix + rand.Text()
	}
	attempts, updated := "", ""
	if old.Attempts != 0 {
		attempts = strconv.Itoa(old.Attempts)
	}
	if !old.UpdatedAt.IsZero() {
		updated = strconv.FormatInt(millis(old.UpdatedAt), 10)
	}
	var reply any
	var acks int64
	err = s.retry(ctx, releaseTries, func(ctx context.Context) error {
		var err error
		reply, acks, err = s.write(ctx, resolveScript, s.Key(skey),
			old.Lease, string(old.Status), attempts, updated,
			string(to), lease, millis(now), expiry(expires), notDoneReason)
		return err
	})
	if err != nil {
		return idem.Record{}, false, fmt.Errorf("redisstore: resolve %q: %w", skey, classify(err))
	}
	rec, written, err := acquired(skey, reply)
	if err != nil {
		return idem.Record{}, false, fmt.Errorf("redisstore: resolve %q: %w", skey, err)
	}
	if !written {
		// A retry of a write that had landed (its answer was lost) finds
		// the record it wrote.
		mine := rec.Status == to && rec.Lease == lease && rec.Attempts == old.Attempts && rec.UpdatedAt.UnixMilli() == now.UnixMilli()
		if !mine {
			if rec.Status == "" {
				rec = idem.Record{} // gone
			}
			return rec, true, nil
		}
	}
	if err := s.replicated(acks); err != nil {
		return rec, false, fmt.Errorf("redisstore: resolve %q: %w", skey, err)
	}
	return rec, false, nil
}
