// Package idemtest helps test code built on package idem, and stores that
// implement [idem.Store].
//
// [MemoryStore] is an in-memory Store and TxStore with the semantics of
// dynamostore (expiry, leases, fencing, FAILED records, transactions): use it
// in unit tests of a consumer instead of a DynamoDB table. [Clock] is a
// settable clock for idem.WithClock.
//
// [TestStore] is the conformance suite, in the manner of testing/fstest.TestFS:
// a new Store passes when
//
//	func TestMyStore(t *testing.T) {
//		idemtest.TestStore(t, func(t *testing.T) idem.Store { return newMyStore(t) })
//	}
//
// passes. Its subtests run in parallel. It covers the first run, duplicates
// replaying the stored result, 16 goroutines racing for one key, lease
// expiry and takeover, a zombie's complete refused with idem.ErrLeaseLost,
// retried writes recognised as the caller's own, release and immediate
// reacquire, payload mismatch, expired receipts, attempt counting, result
// caps (the store's declared Capabilities.MaxResultSize, under the longest
// storage key), bad input, and, for stores that declare
// Capabilities.Transactions, transactional mode (with [WithCounter], that
// the effect's own writes are applied exactly once).
package idemtest
