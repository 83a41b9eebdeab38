package idemtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// Getter is implemented by stores that can read a record by storage key.
// TestStore uses it, when present, to check what was written.
type Getter interface {
	Get(ctx context.Context, key string) (idem.Record, bool, error)
}

// Option configures TestStore.
type Option func(*suite)

// WithCounter lets TestStore check that transactional writes are applied
// exactly once: write returns a store-specific write that increments the
// counter id, and count reads it. Without it the transactional subtests
// commit no writes of their own and check only the receipts.
func WithCounter(write func(id string) any, count func(ctx context.Context, id string) (int, error)) Option {
	return func(s *suite) { s.write, s.count = write, count }
}

type suite struct {
	newStore func(t *testing.T) idem.Store
	write    func(id string) any
	count    func(ctx context.Context, id string) (int, error)
}

// TestStore is the conformance suite for [idem.Store] implementations, in
// the manner of testing/fstest.TestFS: a store passes when TestStore passes.
//
// newStore is called once per subtest, from the subtest's goroutine; it may
// return the same store every time, since every subtest uses namespaces and
// keys of its own. The subtests run in parallel (t.Parallel), so the store
// must be safe for concurrent use, as the Guard requires anyway.
//
// What runs is decided by what the store declares in Capabilities: the
// transactional subtests when Transactions is set (the store must then be an
// [idem.TxStore]), and a round trip of a result of exactly MaxResultSize
// bytes under the longest storage key. Stores that implement [Getter] also
// have their records checked.
func TestStore(t *testing.T, newStore func(t *testing.T) idem.Store, opts ...Option) {
	s := &suite{newStore: newStore}
	for _, o := range opts {
		o(s)
	}
	type subtest struct {
		name string
		fn   func(t *testing.T, store idem.Store)
	}
	tests := []subtest{
		{"FirstRun", s.firstRun},
		{"DuplicateReplaysResult", s.duplicate},
		{"ConcurrentSameKeyRunsOnce", s.concurrent},
		{"InProgressWhileLeaseLive", s.inProgress},
		{"LeaseExpiryTakeover", s.takeover},
		{"ZombieCompleteLeaseLost", s.zombie},
		{"LateReceiptLands", s.lateReceipt},
		{"FencingOnStore", s.fencing},
		{"RetriedWritesAreOwn", s.retriedWrites},
		{"ReleaseAllowsImmediateReacquire", s.release},
		{"RetriedReleaseAfterTakeoverIsOwn", s.releaseRetriedAfterTakeover},
		{"ReleaseAfterTakeoverLeaseLost", s.releaseAfterTakeover},
		{"RetriedReleaseAfterTakeoverAndRelease", s.releaseRetriedAfterTakeoverAndRelease},
		{"PanicReleases", s.panics},
		{"FingerprintMismatch", s.mismatch},
		{"ExpiredReceiptRunsAgain", s.expired},
		{"AttemptsCounted", s.attempts},
		{"OversizedResult", s.oversized},
		{"DeclaredResultSize", s.declaredResultSize},
		{"BadInputMakesNoCall", s.badInput},
		{"TakeoverReported", s.takeoverReported},
		{"HeldStays", s.heldStays},
		{"ExpiredUnknownIsAbsent", s.expiredUnknownIsAbsent},
		{"RemoteEffectsThroughGuard", s.remoteThroughGuard},
	}
	txTests := []subtest{
		{"TxFirstAndDuplicate", s.txFirst},
		{"TxConcurrentDuplicates", s.txConcurrent},
		{"TxMismatch", s.txMismatch},
		{"TxTakesFailedRecord", s.txAfterFailed},
		{"TxBlockedByLiveLease", s.txInProgress},
		{"TxRetriedCommitIsOwn", s.txRetried},
	}
	caps := newStore(t).Capabilities()
	if caps.MaxResultSize <= 0 {
		t.Fatalf("Capabilities().MaxResultSize = %d: a store must declare the largest result it keeps", caps.MaxResultSize)
	}
	if caps.Transactions {
		tests = append(tests, txTests...)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, s.newStore(t))
		})
	}
}

// unique returns a name no other run of the suite uses, so that stores
// shared between subtests (one DynamoDB table) see no interference.
func unique(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

func newGuard(t *testing.T, store idem.Store, opts ...idem.Option) *idem.Guard {
	t.Helper()
	g, err := idem.New(store, unique("ns"), opts...)
	if err != nil {
		t.Fatalf("idem.New: %v", err)
	}
	return g
}

func value(v string) idem.Func {
	return func(context.Context) ([]byte, error) { return []byte(v), nil }
}

func mustOutcome(t *testing.T, what string, res idem.Result, err error, want idem.Outcome) {
	t.Helper()
	if res.Outcome != want {
		t.Fatalf("%s: outcome %v (err %v), want %v", what, res.Outcome, err, want)
	}
}

// record reads the record stored under key when the store is a Getter; ok
// is false when it is not.
func (s *suite) record(t *testing.T, store idem.Store, key string) (idem.Record, bool) {
	t.Helper()
	g, ok := store.(Getter)
	if !ok {
		return idem.Record{}, false
	}
	rec, found, err := g.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get %q: %v", key, err)
	}
	if !found {
		t.Fatalf("Get %q: no record", key)
	}
	return rec, true
}
