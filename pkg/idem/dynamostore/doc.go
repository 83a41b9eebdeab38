// Package dynamostore is the DynamoDB implementation of idem.Store and
// idem.TxStore. It is the only package of the module that imports the
// DynamoDB SDK.
//
// # The record
//
// One item per key in a table whose partition key is the string attribute
// "pk" and whose TTL attribute is "expiresAt" (see DefaultSchema; the stack
// in infra/ creates the table from it):
//
//	pk             S     namespace#sha256(key)
//	status         S     IN_PROGRESS, COMPLETED or FAILED
//	lease          S     fencing token of the attempt holding the record
//	leaseUntil     N     Unix milliseconds; after it the record may be taken over
//	expiresAt      N     Unix seconds; TTL. Read as absent once past, since TTL
//	                     deletes lazily (up to about two days later)
//	attempts       N     incremented by every acquire
//	fingerprint    S     hash of the payload
//	result         B     the result replayed to duplicates
//	resultOmitted  BOOL  the result was too large to keep
//	updatedAt      N     Unix milliseconds
//	lastError      S     why the last attempt failed
//
// # Requests and guarantees
//
// Acquire is one conditional UpdateItem that takes the record only if it is
// absent, expired, FAILED, or IN_PROGRESS with a lease that ran out. A
// conflict returns the record in the way in the same response
// (ReturnValuesOnConditionCheckFailure), so a duplicate costs one request; a
// consistent GetItem is made only if DynamoDB did not return it.
//
// Complete and Release are conditional on the attempt's own lease (fencing):
// an attempt whose lease was taken over gets idem.ErrLeaseLost and cannot
// overwrite the new owner's record. Complete retries throttling, 5xx and
// network errors with capped, jittered exponential backoff until ctx's
// deadline; Release relies on the SDK's retries only, since a lost release
// just delays the next attempt until the lease ends.
//
// So lease mode (idem.Guard.Do) costs two requests per new message and one
// per duplicate; a Guard with a cache answers repeated duplicates from
// memory.
//
// # The one window
//
// In lease mode, if the process dies (or cannot reach DynamoDB until its
// deadline) after the effect happened and before Complete is written, the
// record stays IN_PROGRESS until its lease ends, and the next delivery runs
// the effect again. Nothing in a store can close this window for an effect
// outside DynamoDB; pass the key downstream (idem.LeaseFromContext) so the
// remote system can dedup too.
//
// Transactional mode (idem.Guard.DoTx) has no window: Commit writes the
// COMPLETED receipt and the effect's own writes (types.TransactWriteItem) in
// one TransactWriteItems, conditioned like Acquire. One request per new
// message and one per duplicate (two when a FAILED or expired record must be
// replaced: the second commit is pinned to the attempts count it read, so
// that the count stays exact). Two copies racing make DynamoDB cancel one
// with a TransactionConflict, reported as idem.ErrInProgress. Up to
// MaxTxWrites writes per effect, none of them on the receipt's own item;
// bad writes fail with idem.ErrInvalid before any request, and a write whose
// own condition fails cancels everything with ErrWriteConditionFailed.
//
// # Clocks
//
// leaseUntil and expiresAt are written with the writer's clock and compared
// with another machine's; the Guard's safety margin absorbs the skew.
//
// A Store is safe for concurrent use.
package dynamostore
