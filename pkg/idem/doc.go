// Package idem runs an effect at most once per key, so that an SQS consumer
// that receives a message twice, or twice at the same time, sends one email,
// issues one gift card, makes one payment.
//
// A [Guard] keeps one record per (namespace, key) in a [Store]. The record
// is a lease while the effect runs and a receipt afterwards:
//
//  1. Acquire: one conditional write takes the record if it is absent,
//     expired, FAILED, or IN_PROGRESS with a lease that ran out. Otherwise
//     the record in the way decides the outcome: a receipt (COMPLETED) is a
//     [Duplicate] and its stored result is replayed; a live lease is
//     [ErrInProgress]; a different payload fingerprint is
//     [ErrPayloadMismatch]. A record that carries this attempt's own lease
//     token is its own earlier write, whose response was lost: acquired.
//  2. The effect runs under a context that ends a safety margin before the
//     lease does. The lease defaults to the time left before ctx's deadline
//     (in Lambda, the invocation deadline).
//  3. Complete writes the receipt, on the condition that this attempt still
//     holds the lease (its token is a fencing token), retrying transient
//     store errors for as long as the caller can wait: until ctx's
//     deadline (in Lambda, the invocation's), past the end of the lease
//     too. A fenced write can only land while no other attempt has taken
//     the record, so a late receipt can never hide another attempt, and one
//     that lands makes every later copy a duplicate. An attempt whose
//     lease was taken over gets [ErrLeaseLost] and cannot overwrite the new
//     owner.
//  4. If the effect fails or panics, Release marks the record FAILED when
//     the error is [Definite] (the remote system refused it: nothing took
//     place), else UNKNOWN (a timeout, a broken connection, a panic: it may
//     have), attempts kept, the error's class as last error (see
//     [WithErrorText], [Classify]); the next delivery may take it at once.
//
// # Guarantees
//
// While a receipt is retained ([DefaultRetention], 7 days), the effect of a
// key completes at most once, and two concurrent deliveries never run it at
// the same time while the lease is live. Every call reports its [Outcome];
// the outcomes a caller branches on are sentinel errors for errors.Is. A
// store failure ([ErrStore], outcome [StoreError]) is never confused with
// the effect's own error ([Failed]), nor with a caller's mistake that the
// Guard or the store refuses as invalid ([ErrInvalid], [Rejected]).
//
// # The window
//
// In lease mode the effect can run twice in one case only: its receipt
// could not be written before another attempt took the record over after
// the lease ended. That happens when the process crashes or is frozen
// between the effect and the receipt, when the store stays unreachable (or
// throttles every retry) until the caller's deadline, or when the clocks of
// two machines differ by more than the safety margin. A live process is
// told: the outcome is [Unconfirmed] ([ErrUnconfirmed]) — count it and
// alarm on it — and the Guard owes the receipt: a later call for the key in
// the same process (a copy in the same SQS batch, say) writes it, fenced,
// instead of running the effect again, and answers Duplicate (or
// Unconfirmed while the store still fails). Every owed receipt is kept,
// however many keys end Unconfirmed, until it is written, fenced out or
// expires; only its result is dropped once 8 MiB of owed results are held. A crashed process cannot be
// told; the next attempt's attempt count shows it. (An effect that returns
// an error although it took place, say its own write timed out but was
// applied, is released and run again like any failed effect: the guard
// sees only the error, unless it reconciles, below.) No store can close
// this window for an effect outside the store (an email cannot be rolled
// back together with a receipt); the effect's own system can.
//
// # Remote effects: reconcile, or hold
//
// An attempt that takes over an unknown outcome — a lease that ran out
// IN_PROGRESS, an UNKNOWN release, a receipt owed by a process that died —
// asks first, when the call gave [Reconcile]: applied, the receipt is
// written with the result the reconcile returns and nothing runs
// ([Reconciled]); not applied, the effect runs; cannot tell (an error, a
// panic, no reconcile), the Guard's policy ([WithUnknownOutcome]) decides:
//
//   - [Retry] (the default) runs the effect again: at least once in the
//     window above, at most once everywhere else.
//   - [Hold] parks the record (HELD, no expiry): no attempt runs it, every
//     copy fails with [ErrHeld], until an operator settles it; at most once,
//     always.
//
// With a reconcile that answers truly, lease mode runs the effect exactly
// once: the window closes. A new key costs nothing more: reconciling
// happens only after an unknown outcome. Pass [Lease].Key downstream as
// the idempotency key, so the remote system can answer. Or use
// transactional mode ([Guard.DoTx]): when the effect is itself store
// writes, they are committed with the receipt in one transaction, and the
// effect happens exactly once.
//
// The simulator in integration/sim searches for runs that break these
// statements: it drives the real Guard, stores and SQS batch handler
// through millions of seeded interleavings with faults, crashes, freezes,
// clock skew and TTL, and checks them after every schedule.
//
// # Clocks
//
// Lease and expiry times are written with one machine's clock and compared
// with another's. The safety margin ([DefaultSafetyMargin]) between the end
// of the effect's context and the end of the lease absorbs the skew and
// leaves the receipt time to land.
//
// # Stores
//
// Package idem imports no AWS package. dynamostore is the DynamoDB Store,
// redisstore the Redis and Valkey one, and idemtest has an in-memory Store
// and the conformance suite every Store must pass ([Store] documents the
// contract for implementers). sqsbatch adapts a Guard to SQS batches in
// Lambda.
package idem
