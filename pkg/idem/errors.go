package idem

import "errors"

// Outcomes a caller branches on. Test them with errors.Is: the Guard wraps
// them with the storage key and details.
var (
	// ErrInProgress: another attempt holds a live lease on the key, or a
	// concurrent transaction on it won. Retry later; for SQS, report the
	// record as a batch item failure so it comes back after the visibility
	// timeout.
	ErrInProgress = errors.New("idem: in progress elsewhere")

	// ErrPayloadMismatch: the key was used before with a different payload.
	// The effect did not run. This is a caller bug, not a duplicate.
	ErrPayloadMismatch = errors.New("idem: same key, different payload")

	// ErrLeaseLost: the effect ran but the lease had been taken over by
	// another attempt before this one could write its receipt (fencing).
	// The new owner's record is intact. The effect may have happened twice.
	ErrLeaseLost = errors.New("idem: lease lost to another attempt")

	// ErrUnconfirmed: the effect ran, but its receipt could not be written
	// before the caller's deadline (the store failed or was too slow). The
	// Guard owes the receipt: a later call for the key in this process writes
	// it instead of running the effect. Every owed receipt is kept until it
	// is written, fenced out by another attempt, or expires with the
	// retention; none is dropped for room (once 8 MiB of owed results are
	// held, further receipts are owed without their result). In another process, a delivery after
	// the lease may run the effect again: this is the window of lease mode,
	// reported so it can be counted and alarmed on. The error also wraps the
	// store's error.
	ErrUnconfirmed = errors.New("idem: effect ran, receipt not written")

	// ErrHeld: an earlier attempt's effect may or may not have taken place,
	// reconciling could not tell, and the Guard's policy is Hold
	// (WithUnknownOutcome): the record is parked (StatusHeld) and no
	// attempt runs the effect until an operator settles it (idemctl
	// resolve --done or --not-done). Copies fail with it; for SQS they end
	// in the dead-letter queue with this reason.
	ErrHeld = errors.New("idem: held: an earlier attempt's outcome is unknown")

	// ErrStore: the store failed (unreachable, throttled past every retry,
	// or refused a request). Nothing is known to have run: retry later. An
	// effect's own error is never wrapped with it, nor is a caller's
	// cancellation (Failed, wrapping context.Canceled).
	ErrStore = errors.New("idem: store failed")

	// ErrInvalid: bad input (empty or over-long key, bad namespace, nil
	// function, a duration or size the Guard or its store cannot honour, too
	// many transactional writes), refused before any store call, or a
	// request the store refused as invalid (a transactional write DynamoDB
	// cannot run). Retrying cannot help; it is a caller's mistake, never an
	// outage of the store.
	ErrInvalid = errors.New("idem: invalid input")

	// ErrNotTransactional: DoTx was called on a Guard whose Store cannot
	// commit transactions (Capabilities.Transactions is false).
	ErrNotTransactional = errors.New("idem: store does not support transactions")
)

// Errors a Store returns to the Guard. Callers of Do and DoTx do not see
// them: the Guard turns them into outcomes.
var (
	// ErrResultTooLarge: the store refused the result because of its size
	// and wrote nothing. The Guard writes the receipt again without the
	// result (Result.ResultOmitted): a result never turns into a second
	// effect.
	ErrResultTooLarge = errors.New("idem: result too large for the store")

	// ErrTxAborted: a transaction was cancelled because one of the effect's
	// own writes was refused (its condition failed). Nothing was written and
	// the effect did not happen: the outcome is Failed, not StoreError.
	ErrTxAborted = errors.New("idem: transaction aborted by one of its writes")
)
