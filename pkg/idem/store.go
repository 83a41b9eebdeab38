package idem

import (
	"context"
	"time"
)

// This file is the interface for implementers of a Store (dynamostore,
// redisstore, idemtest.MemoryStore). Users of a Guard do not need it.

// Status is the state of a record.
type Status string

const (
	// StatusInProgress: an attempt holds the lease and is running the effect.
	StatusInProgress Status = "IN_PROGRESS"
	// StatusCompleted: the effect happened; the record is the receipt.
	StatusCompleted Status = "COMPLETED"
	// StatusFailed: the last attempt failed definitely — its effect did
	// not take place (see Definite) — and released its lease; the next
	// delivery may take the record at once.
	StatusFailed Status = "FAILED"
	// StatusUnknown: the last attempt's effect returned an error that does
	// not say whether it took place (a timeout, a reset connection: any
	// error not Definite) or panicked, and released its lease. The next
	// delivery may take the record at once; what it took over is an
	// unknown outcome, which the Guard reconciles or treats by its policy
	// (WithUnknownOutcome).
	StatusUnknown Status = "UNKNOWN"
	// StatusHeld: an unknown outcome that could not be reconciled, parked
	// by WithUnknownOutcome(Hold). No attempt takes it over, and it does
	// not expire, until an operator settles it (idemctl resolve).
	StatusHeld Status = "HELD"
)

// Record is one idempotency record as a Store keeps it.
type Record struct {
	// Key is the storage key, namespace#sha256(key) unless WithPlainKeys.
	Key         string
	Status      Status
	Lease       string    // fencing token of the attempt holding the record
	LeaseUntil  time.Time // after this an IN_PROGRESS record may be taken over
	ExpiresAt   time.Time // after this the record counts as absent (TTL)
	Attempts    int       // incremented by every successful acquire
	Fingerprint string    // hash of the payload
	Result      []byte    // result replayed to duplicates
	// ResultOmitted reports that the effect's result was not kept (larger
	// than the cap, or refused by the store); the receipt was.
	ResultOmitted bool
	// Resolved: the receipt was written by an operator (idemctl resolve
	// --done) after checking downstream, not by the effect; it keeps no
	// result.
	Resolved  bool
	UpdatedAt time.Time
	LastError string
	// PrevStatus is, on a record an acquire took, the status of the record
	// it took over ("" when there was none): the Guard learns from it
	// whether it took over an unknown outcome. (LastError is then still the
	// last error of the attempt it took over.)
	PrevStatus Status
}

// Acquisition is what a Store writes when it takes a record.
type Acquisition struct {
	Key         string
	Lease       string
	LeaseUntil  time.Time
	ExpiresAt   time.Time
	Fingerprint string
	// Now is the writer's clock: a record with ExpiresAt before Now counts
	// as absent, an IN_PROGRESS record with LeaseUntil before Now may be
	// taken over.
	Now time.Time
}

// Released is what a Store writes when the attempt holding a record gives
// it up: Status is StatusFailed, StatusUnknown or StatusHeld.
type Released struct {
	Status Status
	Reason string // kept as the record's LastError
	Now    time.Time
}

// Completion is what a Store writes when an attempt completes.
type Completion struct {
	Result        []byte
	ResultOmitted bool
	ExpiresAt     time.Time
	Now           time.Time
}

// Transaction is the input of TxStore.Commit: the receipt to write and the
// effect's own writes, committed together or not at all.
type Transaction struct {
	Key string
	// Token is written as the receipt's lease, so that a commit whose
	// response was lost and that is retried recognises its own receipt
	// instead of reporting a duplicate.
	Token         string
	ExpiresAt     time.Time
	Fingerprint   string
	Now           time.Time // the writer's clock, as in Acquisition
	Result        []byte
	ResultOmitted bool
	// Writes are store-specific (dynamostore: types.TransactWriteItem).
	Writes []any
}

// Capabilities is what a Store declares about itself. The Guard checks its
// options against them in New, and idemtest.TestStore decides from them
// which parts of the conformance suite apply.
type Capabilities struct {
	// Transactions: the Store is a TxStore, so DoTx can commit an effect's
	// writes with its receipt.
	Transactions bool
	// MaxResultSize is the largest result, in bytes, a record can keep
	// (DynamoDB: its 400 KB item limit less the record's own attributes).
	// A Guard refuses WithMaxResultSize above it and lowers its default to
	// it.
	MaxResultSize int
	// MaxKeySize is the longest storage key (namespace#key, see
	// Guard.StorageKey), in bytes, a record can have (DynamoDB: a sort key
	// is at most 1024 bytes). A Guard rejects a longer one with ErrInvalid
	// before any request; only plain keys (WithPlainKeys) come near it.
	MaxKeySize int
}

// Store persists records. Every method is a single atomic operation; all the
// decisions about what a record means are the Guard's.
//
// A Store must be safe for concurrent use, and its methods idempotent when
// retried with the same arguments: a request whose response was lost may be
// sent again (by an SDK's retries or the store's own), and the second one
// must not report the first one's write as someone else's. Use
// idemtest.TestStore to check an implementation.
//
// Errors: ErrLeaseLost for a fenced-out Complete or Release, ErrInProgress
// for a conflict that says nothing about the record (a concurrent
// transaction), ErrResultTooLarge for a result refused for its size, and
// anything else for a failure of the store itself (the Guard wraps it with
// ErrStore).
type Store interface {
	// Acquire takes the record for a.Key if it is absent, expired (ExpiresAt
	// before a.Now), FAILED, UNKNOWN, or IN_PROGRESS with a lease that ran
	// out before a.Now; never a HELD one. Taking it writes status
	// IN_PROGRESS, the new lease, fingerprint and times, increments
	// Attempts, keeps the taken record's status as PrevStatus (empty for
	// none) and its LastError as it was, and returns the record written
	// with acquired = true. Otherwise it writes nothing and returns the record
	// that stands in the way, as stored, with acquired = false: when that
	// record carries a.Lease, it is this very acquisition's earlier write
	// (a retried request) and the Guard counts it as acquired.
	Acquire(ctx context.Context, a Acquisition) (rec Record, acquired bool, err error)

	// Complete marks the record COMPLETED if it is still held by lease, and
	// returns ErrLeaseLost otherwise. It keeps Attempts and the lease.
	// Writing the same completion twice succeeds twice.
	Complete(ctx context.Context, key, lease string, c Completion) error

	// Release marks the record r.Status (FAILED, UNKNOWN or HELD) with
	// r.Reason as LastError if it is still held by lease, and returns
	// ErrLeaseLost otherwise. It keeps Attempts and the lease; a HELD
	// record loses its expiry (it stays until it is settled), the others
	// keep theirs. A FAILED or UNKNOWN record may be taken at once, so a
	// Release whose request landed but whose response was lost can be sent
	// again after another attempt took the record it left: the Store keeps
	// on the record the lease of the last release that landed (acquires and
	// commits keep it) and, when the fence fails but that lease is the
	// caller's, returns nil and writes nothing; a Release that never landed
	// before the record was taken (a lapsed lease, an expired receipt)
	// returns ErrLeaseLost.
	Release(ctx context.Context, key, lease string, r Released) error

	// Capabilities declares what the store can do.
	Capabilities() Capabilities
}

// TxStore is a Store that can commit an effect's writes together with a
// COMPLETED receipt (transactional mode).
type TxStore interface {
	Store
	// Commit writes the receipt (COMPLETED, Attempts 1 or the old count + 1,
	// lease t.Token) and t.Writes atomically, on the same condition as
	// Acquire. When another receipt is in the way it writes nothing and
	// returns that record with committed = false; a receipt with lease
	// t.Token is this commit's own (a retried request) and counts as
	// committed. A concurrent commit of the same key makes one of them
	// return ErrInProgress; an effect's write whose own condition fails
	// cancels everything with an error wrapping ErrTxAborted.
	Commit(ctx context.Context, t Transaction) (rec Record, committed bool, err error)
}
