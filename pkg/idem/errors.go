package idem

import "errors"

// Outcomes a caller branches on. Test them with errors.Is: the Guard wraps
// them with the key and details.
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
	// another attempt before it could complete, so this attempt's receipt was
	// not written (fencing). The new owner's record is intact. The effect may
	// have happened twice: the documented window of lease mode.
	ErrLeaseLost = errors.New("idem: lease lost to another attempt")

	// ErrInvalid: bad input (empty or over-long key, bad namespace, nil
	// function, non-positive duration, too many transactional writes). No
	// store call was made.
	ErrInvalid = errors.New("idem: invalid input")

	// ErrNotTransactional: DoTx was called on a Guard whose Store does not
	// implement TxStore.
	ErrNotTransactional = errors.New("idem: store does not support transactions")
)
