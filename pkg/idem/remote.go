package idem

import (
	"context"
	"errors"
	"fmt"
)

// An effect on a remote system (an email, an SMS, a payment) can fail in a
// way that does not say whether it took place: the request timed out, the
// connection broke after it was sent. Run again, it may happen twice. The
// Guard therefore tells three things apart:
//
//   - a definite failure (Definite): the remote system refused the
//     request, nothing took place; the record is released FAILED and the
//     next delivery runs the effect at once — unless this attempt took
//     over an unknown outcome it could not settle: then the record stays
//     UNKNOWN, since the refusal says nothing of the earlier call;
//   - any other error, a panic, or a lease that ran out while the effect
//     ran: an unknown outcome; the record is released UNKNOWN (or left
//     IN_PROGRESS), and the attempt that takes it over asks the remote
//     system first (Reconcile): applied → the receipt is written with the
//     result it returns and nothing runs; not applied → the effect runs;
//     cannot tell → the Guard's policy (WithUnknownOutcome): Retry runs it
//     again, Hold parks the record until an operator settles it.
//
// A new key costs nothing more: reconciling happens only after an unknown
// outcome.

// ReconcileFunc asks the remote system whether the effect of the attempt
// in ctx (LeaseFromContext: its Key, passed downstream as the idempotency
// key) already took place: applied with the result to keep with the
// receipt, not applied, or an error when it cannot tell. It runs under
// the lease, like the effect, and only after an unknown outcome.
type ReconcileFunc func(ctx context.Context) (applied bool, result []byte, err error)

// CallOption configures one call of Do.
type CallOption func(*call)

type call struct{ reconcile ReconcileFunc }

// Reconcile gives Do the way to ask the remote system whether an earlier
// attempt's effect took place, used only when this call takes over an
// unknown outcome. Without it the Guard's policy decides at once.
func Reconcile(fn ReconcileFunc) CallOption {
	return func(c *call) { c.reconcile = fn }
}

// UnknownPolicy is what a Guard does with an unknown outcome it could not
// reconcile (WithUnknownOutcome).
type UnknownPolicy int

const (
	// Retry runs the effect again: at least once, the window of lease
	// mode. The default.
	Retry UnknownPolicy = iota
	// Hold parks the record (StatusHeld, ErrHeld): no attempt runs the
	// effect, copies fail with ErrHeld, until an operator settles it. At
	// most once.
	Hold
)

func (p UnknownPolicy) String() string {
	switch p {
	case Retry:
		return "retry"
	case Hold:
		return "hold"
	}
	return fmt.Sprintf("UnknownPolicy(%d)", int(p))
}

// WithUnknownOutcome sets what happens to an unknown outcome that could
// not be reconciled: Retry (the default) or Hold.
func WithUnknownOutcome(p UnknownPolicy) Option {
	return func(o *options) error {
		if p != Retry && p != Hold {
			return fmt.Errorf("%w: unknown-outcome policy %d", ErrInvalid, int(p))
		}
		o.unknown = p
		return nil
	}
}

// unknownTakeover reports whether an acquire that wrote rec took over an
// outcome nobody knows: a lease that ran out, or a release after an error
// that was not definite.
func unknownTakeover(rec Record) bool {
	return rec.PrevStatus == StatusInProgress || rec.PrevStatus == StatusUnknown
}

// settleUnknown runs when an attempt (r, under effectCtx) took over an
// unknown outcome, before its effect: it reconciles, and answers done =
// true with the call's outcome when the effect must not run (reconciled:
// the receipt is written; held: the record parked), or done = false when
// the effect is to run: not applied, or Retry, when the earlier outcome
// stays unknown (still = true): then even a definite failure of this
// attempt releases the record UNKNOWN, since it says nothing of the
// earlier one, and the next attempt reconciles again.
func (g *Guard) settleUnknown(ctx, effectCtx context.Context, skey string, r receipt, reconcile ReconcileFunc) (res Result, done, still bool, err error) {
	reason := "unknown outcome, no reconcile"
	if reconcile != nil {
		applied, value, err := callReconcile(effectCtx, reconcile)
		switch {
		case err == nil && !applied:
			return Result{}, false, false, nil
		case err == nil:
			r.completion.Result = value
			if len(value) > g.opts.maxResult {
				r.completion.Result, r.completion.ResultOmitted = nil, true
			}
			res, err := g.complete(ctx, skey, r, value)
			if res.Outcome == Executed {
				res.Outcome = Reconciled
			}
			return res, true, false, err
		}
		reason = "unknown outcome, reconcile could not tell: " + g.opts.errorText(err)
	}
	if g.opts.unknown == Retry {
		return Result{}, false, true, nil
	}
	switch err := g.release(ctx, skey, r.token, StatusHeld, reason, r.leaseUntil); {
	case errors.Is(err, ErrLeaseLost):
		// Another attempt took the record over (this one outlived its
		// lease): it meets the unknown outcome in turn.
		return Result{Outcome: LeaseLost, Attempts: r.attempts}, true, false,
			fmt.Errorf("idem: hold %s (attempt %d): %w", skey, r.attempts, err)
	case err != nil:
		// Not parked: the record stays ours until the lease ends, and the
		// attempt that takes it over then meets the same unknown outcome.
		return Result{Outcome: StoreError, Attempts: r.attempts}, true, false,
			fmt.Errorf("idem: hold %s (attempt %d): %w", skey, r.attempts, storeError(err))
	}
	return Result{Outcome: Held, Attempts: r.attempts}, true, false,
		fmt.Errorf("%w: %s (attempt %d): %s", ErrHeld, skey, r.attempts, reason)
}

// noTimeAfterReconcile ends an attempt whose reconcile left its effect no
// time (the effect's context ended): the effect did not run, and the
// record is released UNKNOWN, since what the earlier attempt did is as
// unknown as before — a reconcile that answered "not applied" may have
// been overtaken by the earlier request arriving late — so the next
// attempt asks again.
func (g *Guard) noTimeAfterReconcile(ctx context.Context, skey string, r receipt, cause error) (Result, error) {
	err := fmt.Errorf("idem: %s (attempt %d): the reconcile left no time for the effect, which did not run: %w", skey, r.attempts, cause)
	if rerr := g.release(ctx, skey, r.token, StatusUnknown, g.opts.errorText(err), r.leaseUntil); rerr != nil {
		err = errors.Join(err, fmt.Errorf("idem: release: %w", storeError(rerr)))
	}
	return Result{Outcome: Failed, Attempts: r.attempts}, err
}

// callReconcile calls fn; a panic is an answer it could not give.
func callReconcile(ctx context.Context, fn ReconcileFunc) (applied bool, value []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			applied, value, err = false, nil, panicError{p}
		}
	}()
	return fn(ctx)
}
