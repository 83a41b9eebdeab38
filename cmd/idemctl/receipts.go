package main

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// records is a receipt store as the commands read and settle it: a
// DynamoDB table (table.go) or a Redis store (redis.go). Get and Resolve
// are the stores' own (dynamostore.Store and redisstore.Store have the
// same); each is how each store lists a namespace.
type records interface {
	// Get reads the record under skey, expired or not, consistently.
	Get(ctx context.Context, skey string) (rec idem.Record, found bool, err error)
	// Resolve writes to over the record under skey if it is still exactly
	// old, and otherwise returns changed with the record as it is now (the
	// zero Record when it is gone).
	Resolve(ctx context.Context, skey string, old idem.Record, to idem.Status, expires, now time.Time) (rec idem.Record, changed bool, err error)
	// each calls fn for every record of the namespace, of status if it is
	// not empty, from one goroutine at a time. segments is the DynamoDB
	// scan's parallelism; bar may be nil.
	each(ctx context.Context, status idem.Status, segments int, bar *progress, fn func(idem.Record)) error
}

// receipts is one namespace of a receipt store.
type receipts struct {
	records
	namespace string
	// guard hashes keys exactly as the consumer's Guard does.
	guard *idem.Guard
	// store names the store in JSON; name in progress lines and tables
	// (the table, or the Redis URL without its password).
	store storeView
	name  string
	// items is the store's approximate record count, for the progress
	// bar; 0 when unknown.
	items int64
}

// storeView names the receipt store in the commands' JSON: table for a
// DynamoDB table, redis (the URL without its password) for Redis.
type storeView struct {
	Table string `json:"table,omitempty"`
	Redis string `json:"redis,omitempty"`
}

// where is the store in a sentence: "table receipts", "Redis redis://…".
func (s storeView) where() string {
	if s.Redis != "" {
		return "Redis " + s.Redis
	}
	return "table " + s.Table
}

// openReceipts opens the store of r — Redis with --redis-url, else the
// table, after checking that it is a receipt table — and the namespace.
func (a *app) openReceipts(ctx context.Context, r resources) (*receipts, error) {
	if err := r.needStore(); err != nil {
		return nil, err
	}
	if err := validNamespace(r.namespace); err != nil {
		return nil, err
	}
	if r.redisURL != "" {
		return a.openRedis(ctx, r)
	}
	return a.openTable(ctx, r)
}

// newGuard is a Guard of the namespace on store, which hashes keys exactly
// as the consumer's does; idemctl never runs an effect with it.
func (a *app) newGuard(store idem.Store, namespace string) (*idem.Guard, error) {
	var opts []idem.Option
	if a.plainKeys {
		opts = append(opts, idem.WithPlainKeys())
	}
	g, err := idem.New(store, namespace, opts...)
	if err != nil {
		return nil, usagef("%v", err)
	}
	return g, nil
}

// validNamespace refuses what no Guard takes, before any request.
func validNamespace(ns string) error {
	if ns == "" || len(ns) > idem.MaxNamespaceLen || strings.Contains(ns, idem.KeySeparator) || !utf8.ValidString(ns) {
		return usagef("namespace %q: 1 to %d bytes of UTF-8 without %q", ns, idem.MaxNamespaceLen, idem.KeySeparator)
	}
	return nil
}

func knownStatus(s idem.Status) bool {
	switch s {
	case idem.StatusInProgress, idem.StatusCompleted, idem.StatusFailed, idem.StatusUnknown, idem.StatusHeld:
		return true
	}
	return false
}

// prefix begins every storage key of the namespace.
func (rc *receipts) prefix() string { return rc.namespace + idem.KeySeparator }

// storageKey is the storage key of a key the operator typed: hashed as the
// consumer's Guard hashes it, or, with --storage-key, taken as it is (as
// `list` prints it and the consumer logs it as storage_key).
func (rc *receipts) storageKey(arg string, storage bool) (string, error) {
	if storage {
		if !strings.HasPrefix(arg, rc.prefix()) || len(arg) == len(rc.prefix()) {
			return "", usagef("storage key %q is not of namespace %q (%s…)", arg, rc.namespace, rc.prefix())
		}
		return arg, nil
	}
	switch {
	case arg == "":
		return "", usagef("empty key")
	case len(arg) > idem.MaxKeyLen:
		return "", usagef("a key of %d bytes: keys are at most %d", len(arg), idem.MaxKeyLen)
	case !utf8.ValidString(arg):
		return "", usagef("a key that is not UTF-8")
	}
	return rc.guard.StorageKey(arg), nil
}

// get reads the record under skey with a consistent read, expired or not.
func (rc *receipts) get(ctx context.Context, skey string) (idem.Record, bool, error) {
	return rc.Get(ctx, skey)
}
