package idem

import (
	"context"
	"fmt"
	"time"
)

// Lease describes the attempt running an effect. Attempt increases with
// every acquire of a key while its record is retained (it starts again at 1
// once TTL has deleted it), so it can serve as a fencing token for a
// downstream system that rejects writes from older attempts.
type Lease struct {
	Key     string // the caller's key, e.g. for an Idempotency-Key header
	Token   string
	Attempt int
	Until   time.Time
	// Previous is the status of the record this attempt took over: "" for
	// none (or an expired receipt), StatusFailed after a definite failure,
	// and StatusInProgress or StatusUnknown when an earlier attempt's
	// effect may have taken place (the Guard reconciled and was told it had
	// not, or its policy is Retry): pass Key downstream, so that the
	// remote system can tell a repeat.
	Previous Status
}

type leaseKey struct{}

// LeaseFromContext returns the lease of the attempt running the effect; it
// is set in the context Do passes to the effect.
func LeaseFromContext(ctx context.Context) (Lease, bool) {
	l, ok := ctx.Value(leaseKey{}).(Lease)
	return l, ok
}

// window returns when the lease of an attempt starting at now ends, and
// when its effect's context must end: a safety margin before the lease or
// before ctx's deadline, whichever comes first, so that the receipt can
// still be written in time.
func (g *Guard) window(ctx context.Context, now time.Time) (leaseUntil, effectEnd time.Time, err error) {
	deadline, hasDeadline := ctx.Deadline()
	lease := g.opts.lease
	if lease == 0 {
		lease = DefaultLease
		if hasDeadline {
			lease = deadline.Sub(now)
		}
	}
	leaseUntil = now.Add(lease)
	end := leaseUntil
	if hasDeadline && deadline.Before(end) {
		end = deadline
	}
	effectEnd = end.Add(-g.opts.margin)
	if !effectEnd.After(now) {
		return time.Time{}, time.Time{}, fmt.Errorf("idem: %s left, not more than the %s safety margin: no time for the effect: %w",
			end.Sub(now).Round(time.Millisecond), g.opts.margin, context.DeadlineExceeded)
	}
	return leaseUntil, effectEnd, nil
}

// writeContext is the context of a receipt or a release. It is not
// cancelled with the effect (what happened must still be recorded), and it
// does not end with the lease: the write is fenced by the lease token, so it
// lands only while no other attempt has taken the record over. It ends with
// ctx's deadline (the Lambda's), or, when ctx has none, a safety margin
// after the later of now and the lease end.
func (g *Guard) writeContext(ctx context.Context, leaseUntil time.Time) (context.Context, context.CancelFunc) {
	base := context.WithoutCancel(ctx)
	if d, ok := ctx.Deadline(); ok {
		return context.WithDeadline(base, d)
	}
	now := g.opts.now()
	return context.WithTimeout(base, later(leaseUntil, now).Sub(now)+g.opts.margin)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
