// Package idem runs an effect at most once per key, so that an SQS consumer
// that receives a message twice, or twice at the same time, sends one email,
// issues one gift card, makes one payment.
//
// A Guard keeps one record per (namespace, key) in a Store. The record is a
// lease while the effect runs and a receipt afterwards:
//
//  1. Acquire: one conditional write takes the record if it is absent,
//     expired, FAILED, or IN_PROGRESS with a lease that ran out. Otherwise
//     the record in the way decides the outcome: a receipt (COMPLETED) is a
//     Duplicate and its stored result is replayed; a live lease is
//     ErrInProgress; a different payload fingerprint is ErrPayloadMismatch.
//  2. The effect runs under a context that ends a safety margin before the
//     lease does. The lease defaults to the time left before ctx's deadline
//     (in Lambda, the invocation deadline).
//  3. Complete writes the receipt, on the condition that this attempt still
//     holds the lease (its token is a fencing token). An attempt whose lease
//     was taken over gets ErrLeaseLost and cannot overwrite the new owner.
//  4. If the effect fails or panics, Release marks the record FAILED (attempts
//     kept, last error truncated) and the next delivery may run at once.
//
// # Guarantees
//
// While a receipt is retained (DefaultRetention, 7 days), the effect of a key
// completes at most once, and two concurrent deliveries never run it at the
// same time while the lease is live. Every call reports its Outcome; the
// outcomes a caller branches on are sentinel errors for errors.Is.
//
// # The one window
//
// In lease mode, a process that dies after the effect and before Complete
// leaves an IN_PROGRESS record; once its lease expires the next delivery runs
// the effect again. This is inherent to any effect outside the store (an
// email cannot be rolled back). Narrow it by passing Lease.Key downstream as
// an idempotency key. Close it with transactional mode (DoTx): when the
// effect is itself store writes, they are committed with the receipt in one
// transaction, and the effect happens exactly once.
//
// # Clocks
//
// Lease and expiry times are written with one machine's clock and compared
// with another's. The safety margin (DefaultSafetyMargin) between the end of
// the effect's context and the end of the lease absorbs the skew.
//
// Package idem imports no AWS package: dynamostore is the DynamoDB Store,
// idemtest has an in-memory Store and the conformance suite, and sqsbatch
// adapts a Guard to SQS batches in Lambda.
package idem
