package idem

import (
	"context"
	"time"
)

// Outcome says what a call to Do or DoTx did.
type Outcome int

const (
	// Executed: the effect ran now and its receipt was written.
	Executed Outcome = iota + 1
	// Duplicate: a receipt existed; the effect did not run and the stored
	// result was replayed.
	Duplicate
	// InProgress: another attempt holds the key (ErrInProgress).
	InProgress
	// Mismatch: the key was used with another payload (ErrPayloadMismatch).
	Mismatch
	// LeaseLost: the effect ran but another attempt took the lease over
	// before this one wrote its receipt (ErrLeaseLost).
	LeaseLost
	// Failed: the effect returned an error or panicked (or a transactional
	// effect's own write was refused); the record was released as FAILED so
	// the next delivery can run at once. Also a call whose context ended
	// (cancelled, or too little time left) before its effect could run: the
	// error wraps context.Canceled or context.DeadlineExceeded, and the
	// effect did not run (a lease an interrupted acquire took runs out).
	Failed
	// Rejected: the input was invalid (ErrInvalid); nothing was stored.
	Rejected
	// Unconfirmed: the effect ran but its receipt could not be written
	// before the caller's deadline (ErrUnconfirmed). The effect is done. A
	// later call for the key in this process writes the receipt instead of
	// running the effect; in another process, a delivery after the lease
	// may run it again.
	Unconfirmed
	// StoreError: the store failed before the effect could run (ErrStore).
	StoreError
	// Reconciled: this attempt took over an unknown outcome (an earlier
	// attempt's lease ran out, or its effect returned an error that was not
	// Definite), asked the remote system (Reconcile), learnt the effect had
	// taken place, and wrote the receipt with the result the reconcile
	// returned. The effect did not run again.
	Reconciled
	// Held: the key's outcome is unknown and parked (ErrHeld): the effect
	// did not run.
	Held
	// Rerun: this attempt took over an unknown outcome that no reconcile
	// settled (there was none, or it could not tell), and under
	// WithUnknownOutcome(Retry) ran the effect again and wrote its receipt.
	// This is lease mode's window, entered: the earlier attempt's effect
	// may have taken place too. The error is nil, as for Executed; it is
	// an outcome of its own so that what Retry costs is counted. (A re-run
	// whose receipt then could not be written is Unconfirmed or LeaseLost,
	// with Result.Rerun set.)
	Rerun
)

var outcomeNames = [...]string{
	Executed:    "executed",
	Duplicate:   "duplicate",
	InProgress:  "in_progress",
	Mismatch:    "mismatch",
	LeaseLost:   "lease_lost",
	Failed:      "failed",
	Rejected:    "rejected",
	Unconfirmed: "unconfirmed",
	StoreError:  "store_error",
	Reconciled:  "reconciled",
	Held:        "held",
	Rerun:       "rerun",
}

func (o Outcome) String() string {
	if o > 0 && int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "unknown"
}

// Result is what Do and DoTx report. It is filled for every outcome, errors
// included, so callers can log it.
type Result struct {
	Outcome Outcome
	// Value is the effect's result (Executed, Rerun, Unconfirmed, LeaseLost), the
	// stored one (Duplicate), or the reconciled one (Reconciled).
	Value []byte
	// ResultOmitted: the result was not kept with the receipt (larger than
	// the cap, or refused by the store). On a Duplicate, Value is nil and
	// the caller learns no result was kept.
	ResultOmitted bool
	// Resolved: on a Duplicate, the receipt was written by an operator
	// (idemctl resolve --done) after checking downstream, not by the
	// effect: no result was kept (ResultOmitted too).
	Resolved bool
	// Rerun: the effect ran again over an unknown outcome nobody settled
	// (outcome Rerun; or Unconfirmed or LeaseLost, when the re-run's
	// receipt was not written): however the call ended, the effect may
	// now have taken place twice, and it counts as a re-run.
	Rerun bool
	// Attempts is the record's attempt count, when known.
	Attempts int
	// Cached: a Duplicate answered from the per-process cache, no request.
	Cached bool
	// LeaseUntil, for InProgress, is when the lease of the attempt holding
	// the key ends (by the holder's clock): after it, the key is a
	// Duplicate or free to take. Zero when unknown.
	LeaseUntil time.Time
}

// Event is passed to the observer after every call; count them for metrics.
type Event struct {
	Namespace string
	Outcome   Outcome
	Attempts  int
	Cached    bool
	// Duration of the whole call, effect included.
	Duration time.Duration
	// Err is the error Do returned, nil for Executed and Duplicate.
	Err error
}

// Observer is told about every outcome, with the context of the call (a
// tracer finds its span there). It must be safe for concurrent use and
// fast: it runs inline.
type Observer func(context.Context, Event)
