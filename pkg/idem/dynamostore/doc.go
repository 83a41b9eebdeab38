// Package dynamostore is the DynamoDB implementation of [idem.Store] and
// [idem.TxStore].
//
// # The record
//
// One item per key in a table whose partition key is the string attribute
// "pk" and whose TTL attribute is "expiresAt" (see [DefaultSchema]; the
// stack in infra/ creates the table from it):
//
//	pk             S     namespace#sha256(key)
//	status         S     IN_PROGRESS, COMPLETED, FAILED, UNKNOWN or HELD
//	lease          S     fencing token of the attempt holding the record
//	leaseUntil     N     Unix milliseconds; after it the record may be taken over
//	expiresAt      N     Unix seconds; TTL. Read as absent once past, since TTL
//	                     deletes lazily (up to about two days later)
//	attempts       N     incremented by every acquire
//	fingerprint    S     hash of the payload
//	result         B     the result replayed to duplicates
//	resultOmitted  BOOL  the result was not kept
//	updatedAt      N     Unix milliseconds
//	lastError      S     what the last failed attempt left (its error's class by default)
//	released       S     lease of the last attempt whose release landed; acquires keep it
//	prevStatus     S     on a record an acquire took: the status it took over ("" for none)
//	prevLease      S     on a record an acquire took: the lease it took over ("" for none)
//	prevExpiresAt  N     on a record an acquire took: the expiry of the record it took over
//	                     (0 for none); taken past it, nothing was taken over
//	resolved       BOOL  on a receipt Resolve wrote: an operator wrote it after checking
//	                     downstream (idemctl resolve --done); acquires and commits remove it
//
// [WithSchema] renames the attributes. [WithCompositeKey] puts the records in
// a table with a partition and a sort key, such as an existing single-table
// design: every record under one fixed partition value, the storage key as
// the sort key.
//
// # Requests and guarantees
//
// Acquire is one conditional UpdateItem that takes the record only if it is
// absent, expired, FAILED, UNKNOWN, or IN_PROGRESS with a lease that ran
// out; never HELD, which has no expiry either. A
// conflict returns the record in the way in the same response
// (ReturnValuesOnConditionCheckFailure), so a duplicate costs one request; a
// consistent GetItem is made only if DynamoDB did not return it.
//
// Complete and Release are conditional on the attempt's own lease (fencing):
// an attempt whose lease was taken over gets [idem.ErrLeaseLost] and cannot
// overwrite the new owner's record. A FAILED record may be taken at once,
// so a release whose response was lost can be sent again after another
// attempt took the record it left; the record returned with the failed
// condition (ALL_OLD) still names the caller's lease as released, or as
// the lease the last acquire took over from a FAILED or UNKNOWN record,
// and the retry is the caller's own: done, not lease lost.
//
// [Store.Resolve] is an operator's write (idemctl resolve), never an
// attempt's: it settles a record after someone checked downstream, on the
// condition that the record is still exactly as they read it (lease,
// status, attempts, update time), so that it never overwrites what an
// attempt wrote in between. [Store.Get] reads a record with a consistent
// read and [Store.Decode] an item a Scan returned, for tools.
//
// So lease mode ([idem.Guard.Do]) costs two requests per new message and one
// per duplicate; a Guard with a cache answers repeated duplicates from
// memory.
//
// # Retries
//
// The Store retries throttling, DynamoDB's 5xx and network errors itself,
// with capped exponential backoff and full jitter (25 ms doubling to 400
// ms), and turns the SDK client's retries off for its requests: the SDK's
// standard retryer draws on a retry quota shared by the whole client, which
// a burst of throttling empties, after which it does not retry at all.
// Complete is retried until its context ends — the Guard gives it the
// caller's deadline, past the lease too: the write is fenced by the lease
// token and lands only while no other attempt holds the record. Acquire,
// Commit and reads make up to 8 attempts, Release 4. Every
// retry is the same request: a write that landed but whose response was
// lost is recognised by its lease token (acquire, complete, release) or its
// commit token (transactions) as the caller's own.
//
// # Limits
//
// [Store.Capabilities] declares the largest result an item can hold: 400 KB
// less the record's attribute names, its longest storage key and its other
// values (about 395 KB with the default schema). A result DynamoDB refuses
// anyway for its size is [idem.ErrResultTooLarge], and the Guard keeps the
// receipt without it.
//
// # Transactional mode
//
// Transactional mode ([idem.Guard.DoTx]) has no window: Commit writes the
// COMPLETED receipt and the effect's own writes (types.TransactWriteItem) in
// one TransactWriteItems, conditioned like Acquire. One request per new
// message and one per duplicate (two when a FAILED or expired record must be
// replaced: the second commit is pinned to the attempts count it read, so
// that the count stays exact). Two copies racing make DynamoDB cancel one
// with a TransactionConflict, reported as [idem.ErrInProgress]. Up to
// [MaxTxWrites] writes per effect, none of them on the receipt's own item;
// bad writes fail with [idem.ErrInvalid] before any request, and a write
// whose own condition fails cancels everything with
// [ErrWriteConditionFailed] (which wraps [idem.ErrTxAborted]).
//
// # Errors
//
// A request DynamoDB (or the SDK, before sending) refuses as invalid — a
// ValidationException: an effect's write with a malformed expression or a
// key that is not its table's, a receipt table whose key schema is not the
// Store's — is [idem.ErrInvalid]: the caller's mistake, never reported as
// a store outage ([idem.ErrStore]), which would fail whole SQS batches as
// if the table were down. New refuses what DynamoDB would refuse on every
// request: a table name that is not one, key attribute names over 255
// bytes. Attribute names are used as they are, dots included (never read
// as document paths).
//
// # Clocks
//
// leaseUntil and expiresAt are written with the writer's clock and compared
// with another machine's; the Guard's safety margin absorbs the skew.
//
// A Store is safe for concurrent use. Its expressions are built once per
// shape and reused, with the expression package, so a request costs no
// expression building.
package dynamostore
