package idem

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// receipt is the record of an effect that ran under a lease: what Complete
// writes, fenced by the token the effect ran under. Its result is the one
// the receipt keeps (nil past the cap), never more: an owed receipt holds
// it until it is written.
type receipt struct {
	token       string
	fingerprint string
	attempts    int
	completion  Completion
	leaseUntil  time.Time
}

// bytes is how much result r holds.
func (r receipt) bytes() int { return len(r.completion.Result) }

// expires is when an owed receipt is forgotten: a second after the receipt
// would have expired, since a store may keep expiry in whole seconds
// (DynamoDB's TTL attribute) and count the record as there until then.
// Forgetting it earlier could run the effect again while the record still
// stands.
func (r receipt) expires() time.Time { return r.completion.ExpiresAt.Add(time.Second) }

// complete writes the receipt of an effect that ran and reports the
// outcome. The write is fenced by the lease token, so it lands only if no
// other attempt took the record over, and it is retried past the lease end
// for as long as the caller can wait (writeContext): a receipt that lands
// late still makes every later copy a duplicate. One that cannot be written
// is owed: a later call for the key in this process writes it instead of
// running the effect again.
func (g *Guard) complete(ctx context.Context, skey string, r receipt, value []byte) (Result, error) {
	err := g.writeReceipt(ctx, skey, &r)
	res := Result{Value: value, ResultOmitted: r.completion.ResultOmitted, Attempts: r.attempts}
	switch {
	case err == nil:
		g.remember(skey, r.fingerprint, r.completion.Result, r.completion.ResultOmitted, r.attempts, r.completion.ExpiresAt)
		res.Outcome = Executed
		return res, nil
	case errors.Is(err, ErrLeaseLost):
		res.Outcome = LeaseLost
		return res, fmt.Errorf("idem: complete %s (attempt %d): %w", skey, r.attempts, err)
	default:
		g.owed.put(skey, r, g.opts.now())
		res.Outcome = Unconfirmed
		return res, fmt.Errorf("idem: complete %s (attempt %d): %w: %w", skey, r.attempts, ErrUnconfirmed, storeError(err))
	}
}

// writeReceipt writes r, dropping its result when the store refuses it for
// its size: a result must never cost a receipt.
func (g *Guard) writeReceipt(ctx context.Context, skey string, r *receipt) error {
	wctx, cancel := g.writeContext(ctx, r.leaseUntil)
	defer cancel()
	r.completion.Now = g.opts.now()
	err := g.store.Complete(wctx, skey, r.token, r.completion)
	if errors.Is(err, ErrResultTooLarge) && !r.completion.ResultOmitted {
		r.completion.Result, r.completion.ResultOmitted = nil, true
		err = g.store.Complete(wctx, skey, r.token, r.completion)
	}
	return err
}

// fromOwed answers a call for a key whose effect this process already ran
// without landing its receipt (Unconfirmed): it writes the receipt now and
// answers Duplicate, or, when the store still fails, Unconfirmed again —
// never a second run. ok is false when nothing is owed for skey, or when
// another attempt has taken the record over since (the caller goes on as
// if nothing were owed: the record decides).
func (g *Guard) fromOwed(ctx context.Context, skey, fp string, now time.Time) (res Result, ok bool, err error) {
	r, found := g.owed.get(skey, now)
	if !found {
		return Result{}, false, nil
	}
	res = Result{Attempts: r.attempts}
	if r.fingerprint != "" && fp != "" && r.fingerprint != fp {
		res.Outcome = Mismatch
		return res, true, fmt.Errorf("%w: %s", ErrPayloadMismatch, skey)
	}
	err = g.writeReceipt(ctx, skey, &r)
	switch {
	case err == nil:
		g.owed.remove(skey, r.token)
		g.remember(skey, r.fingerprint, r.completion.Result, r.completion.ResultOmitted, r.attempts, r.completion.ExpiresAt)
		res.Outcome, res.Value, res.ResultOmitted = Duplicate, slices.Clone(r.completion.Result), r.completion.ResultOmitted
		return res, true, nil
	case errors.Is(err, ErrLeaseLost):
		// Fenced out. Another invocation of this process may owe the
		// receipt of the attempt that took the record over: that one next.
		g.owed.remove(skey, r.token)
		return g.fromOwed(ctx, skey, fp, now)
	default:
		g.owed.put(skey, r, g.opts.now())
		res.Outcome, res.Value, res.ResultOmitted = Unconfirmed, slices.Clone(r.completion.Result), r.completion.ResultOmitted
		return res, true, fmt.Errorf("idem: complete %s (attempt %d, owed): %w: %w", skey, r.attempts, ErrUnconfirmed, storeError(err))
	}
}
