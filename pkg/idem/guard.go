package idem

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Func is the effect guarded by Do. It runs at most once per key while the
// receipt is retained, under a context that ends before the lease does. Its
// result is stored and replayed to duplicates.
type Func func(ctx context.Context) ([]byte, error)

// Tx is what a TxFunc returns: the effect as store writes, committed
// together with the receipt.
type Tx struct {
	// Writes are store-specific; dynamostore takes types.TransactWriteItem.
	Writes []any
	// Result is stored and replayed to duplicates.
	Result []byte
}

// TxFunc computes the writes of a transactional effect. It must have no
// other side effect: it runs for every delivery, duplicates included, and
// only the commit decides whether its writes happen.
type TxFunc func(ctx context.Context) (Tx, error)

// Guard runs effects at most once per (namespace, key). It is safe for
// concurrent use; create one per namespace and reuse it across invocations.
type Guard struct {
	store     Store
	namespace string
	opts      options
	cache     *cache
}

// New returns a Guard over store for namespace. The namespace separates the
// consumers that share a table; it cannot be empty or contain KeySeparator.
func New(store Store, namespace string, opts ...Option) (*Guard, error) {
	if store == nil {
		return nil, fmt.Errorf("%w: nil store", ErrInvalid)
	}
	if err := validNamespace(namespace); err != nil {
		return nil, err
	}
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	g := &Guard{store: store, namespace: namespace, opts: o}
	if o.cacheSize > 0 {
		g.cache = newCache(o.cacheSize)
	}
	return g, nil
}

// Namespace returns the Guard's namespace.
func (g *Guard) Namespace() string { return g.namespace }

// StorageKey returns the key under which the record for key is stored.
func (g *Guard) StorageKey(key string) string {
	if g.opts.plainKeys {
		return g.namespace + KeySeparator + key
	}
	sum := sha256.Sum256([]byte(key))
	return g.namespace + KeySeparator + hex.EncodeToString(sum[:])
}

// Do runs fn unless a receipt for key exists, and reports what happened.
//
// payload is fingerprinted: reusing key with a different payload returns
// ErrPayloadMismatch instead of a duplicate. Pass nil to skip the check.
//
// The error is nil for Executed and Duplicate. Otherwise it wraps
// ErrInProgress, ErrPayloadMismatch, ErrLeaseLost, ErrInvalid, fn's error,
// or a store error.
func (g *Guard) Do(ctx context.Context, key string, payload []byte, fn Func) (Result, error) {
	start := g.opts.now()
	defer g.observePanic(start)
	res, err := g.do(ctx, key, payload, fn, start)
	g.observe(res, err, start)
	return res, err
}

// DoTx is transactional mode: fn returns the effect as store writes, and the
// store commits them with the COMPLETED receipt in one transaction, or not at
// all. There is no lease and no window: the effect happens exactly once. One
// store request for a new key, one for a duplicate.
//
// The store must implement TxStore (ErrNotTransactional otherwise).
func (g *Guard) DoTx(ctx context.Context, key string, payload []byte, fn TxFunc) (Result, error) {
	start := g.opts.now()
	defer g.observePanic(start)
	res, err := g.doTx(ctx, key, payload, fn, start)
	g.observe(res, err, start)
	return res, err
}

func (g *Guard) do(ctx context.Context, key string, payload []byte, fn Func, now time.Time) (Result, error) {
	if err := validCall(key, fn == nil); err != nil {
		return Result{Outcome: Rejected}, err
	}
	skey, fp := g.StorageKey(key), fingerprint(payload)
	if res, ok, err := g.fromCache(skey, fp, now); ok {
		return res, err
	}

	leaseUntil, effectEnd, err := g.window(ctx, now)
	if err != nil {
		return Result{Outcome: Failed}, err
	}
	token, err := newToken()
	if err != nil {
		return Result{Outcome: Failed}, err
	}
	acq := Acquisition{
		Key:        skey,
		Lease:      token,
		LeaseUntil: leaseUntil,
		// A live lease must never count as expired, whatever the retention.
		ExpiresAt:   later(now.Add(g.opts.retention), leaseUntil.Add(g.opts.margin)),
		Fingerprint: fp,
		Now:         now,
	}
	rec, acquired, err := g.store.Acquire(ctx, acq)
	if err != nil {
		return Result{Outcome: outcomeOf(err)}, fmt.Errorf("idem: acquire %s: %w", skey, err)
	}
	if !acquired {
		return g.conflict(skey, rec, fp, now)
	}

	effectCtx, cancel := context.WithDeadline(ctx, effectEnd)
	defer cancel()
	effectCtx = context.WithValue(effectCtx, leaseKey{}, Lease{
		Key: key, Token: token, Attempt: rec.Attempts, Until: acq.LeaseUntil,
	})
	value, err := g.run(effectCtx, fn, func(reason string) error {
		return g.release(ctx, skey, token, reason)
	})
	if err != nil {
		return Result{Outcome: Failed, Attempts: rec.Attempts}, err
	}

	c := Completion{Result: value, ExpiresAt: acq.ExpiresAt, Now: g.opts.now()}
	if len(value) > g.opts.maxResult {
		c.Result, c.ResultOmitted = nil, true
	}
	wctx, wcancel := writeContext(ctx)
	defer wcancel()
	if err := g.store.Complete(wctx, skey, token, c); err != nil {
		res := Result{Outcome: outcomeOf(err), Value: value, Attempts: rec.Attempts}
		return res, fmt.Errorf("idem: complete %s (attempt %d): %w", skey, rec.Attempts, err)
	}
	g.remember(skey, fp, c.Result, c.ResultOmitted, rec.Attempts, c.ExpiresAt)
	return Result{Outcome: Executed, Value: value, ResultOmitted: c.ResultOmitted, Attempts: rec.Attempts}, nil
}

func (g *Guard) doTx(ctx context.Context, key string, payload []byte, fn TxFunc, now time.Time) (Result, error) {
	ts, ok := g.store.(TxStore)
	if !ok {
		return Result{Outcome: Rejected}, fmt.Errorf("%w: %w", ErrInvalid, ErrNotTransactional)
	}
	if err := validCall(key, fn == nil); err != nil {
		return Result{Outcome: Rejected}, err
	}
	skey, fp := g.StorageKey(key), fingerprint(payload)
	if res, ok, err := g.fromCache(skey, fp, now); ok {
		return res, err
	}

	var tx Tx
	_, err := g.run(ctx, func(ctx context.Context) ([]byte, error) {
		var err error
		tx, err = fn(ctx)
		return nil, err
	}, nil)
	if err != nil {
		return Result{Outcome: Failed}, err
	}
	token, err := newToken()
	if err != nil {
		return Result{Outcome: Failed}, err
	}
	t := Transaction{
		Key:         skey,
		Token:       token,
		ExpiresAt:   now.Add(g.opts.retention),
		Fingerprint: fp,
		Now:         now,
		Result:      tx.Result,
		Writes:      tx.Writes,
	}
	if len(t.Result) > g.opts.maxResult {
		t.Result, t.ResultOmitted = nil, true
	}
	rec, committed, err := ts.Commit(ctx, t)
	if err != nil {
		return Result{Outcome: outcomeOf(err)}, fmt.Errorf("idem: commit %s: %w", skey, err)
	}
	if !committed {
		return g.conflict(skey, rec, fp, now)
	}
	g.remember(skey, fp, t.Result, t.ResultOmitted, rec.Attempts, t.ExpiresAt)
	return Result{Outcome: Executed, Value: tx.Result, ResultOmitted: t.ResultOmitted, Attempts: rec.Attempts}, nil
}

// conflict turns the record that stood in the way of skey into an outcome.
// Errors name the storage key, never the caller's key: it may be personal
// data, and errors end up in logs.
func (g *Guard) conflict(skey string, rec Record, fp string, now time.Time) (Result, error) {
	res := Result{Attempts: rec.Attempts}
	if rec.Fingerprint != "" && fp != "" && rec.Fingerprint != fp {
		res.Outcome = Mismatch
		return res, fmt.Errorf("%w: %s", ErrPayloadMismatch, skey)
	}
	if rec.Status == StatusCompleted {
		g.remember(skey, rec.Fingerprint, rec.Result, rec.ResultOmitted, rec.Attempts, rec.ExpiresAt)
		res.Outcome, res.Value, res.ResultOmitted = Duplicate, rec.Result, rec.ResultOmitted
		return res, nil
	}
	res.Outcome = InProgress
	if rec.LeaseUntil.After(now) {
		return res, fmt.Errorf("%w: %s leased for another %s", ErrInProgress, skey, rec.LeaseUntil.Sub(now).Round(time.Millisecond))
	}
	return res, fmt.Errorf("%w: %s", ErrInProgress, skey)
}

// run calls fn; when fn fails or panics it releases the record with the
// reason (release is nil in transactional mode, where nothing is held). A
// panic is re-raised after the release.
func (g *Guard) run(ctx context.Context, fn Func, release func(reason string) error) (value []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			if release != nil {
				_ = release(fmt.Sprintf("panic: %v", p))
			}
			panic(p)
		}
	}()
	value, err = fn(ctx)
	if err != nil && release != nil {
		if rerr := release(err.Error()); rerr != nil {
			return nil, errors.Join(err, fmt.Errorf("idem: release: %w", rerr))
		}
	}
	return value, err
}

func (g *Guard) release(ctx context.Context, skey, token, reason string) error {
	ctx, cancel := writeContext(ctx)
	defer cancel()
	return g.store.Release(ctx, skey, token, truncate(reason, MaxLastErrorLen), g.opts.now())
}

// window returns when the lease of an attempt starting at now ends, and
// when its effect's context must end: a safety margin before the lease or
// before ctx's deadline, whichever comes first, so that the receipt can
// still be written in time.
func (g *Guard) window(ctx context.Context, now time.Time) (leaseUntil, effectEnd time.Time, err error) {
	deadline, hasDeadline := ctx.Deadline()
	lease := g.opts.lease
	if lease == 0 {
		lease = DefaultLease
		if hasDeadline {
			lease = deadline.Sub(now)
		}
	}
	leaseUntil = now.Add(lease)
	end := leaseUntil
	if hasDeadline && deadline.Before(end) {
		end = deadline
	}
	effectEnd = end.Add(-g.opts.margin)
	if !effectEnd.After(now) {
		return time.Time{}, time.Time{}, fmt.Errorf("idem: %s left, not more than the %s safety margin: no time for the effect: %w",
			end.Sub(now).Round(time.Millisecond), g.opts.margin, context.DeadlineExceeded)
	}
	return leaseUntil, effectEnd, nil
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (g *Guard) fromCache(skey, fp string, now time.Time) (res Result, ok bool, err error) {
	if g.cache == nil {
		return Result{}, false, nil
	}
	e, ok := g.cache.get(skey, now)
	if !ok {
		return Result{}, false, nil
	}
	if e.fingerprint != "" && fp != "" && e.fingerprint != fp {
		return Result{Outcome: Mismatch, Attempts: e.attempts, Cached: true}, true,
			fmt.Errorf("%w: %s", ErrPayloadMismatch, skey)
	}
	return Result{Outcome: Duplicate, Value: e.result, ResultOmitted: e.omitted, Attempts: e.attempts, Cached: true}, true, nil
}

func (g *Guard) remember(skey, fp string, result []byte, omitted bool, attempts int, expiresAt time.Time) {
	if g.cache != nil {
		g.cache.put(skey, cacheEntry{fingerprint: fp, result: result, omitted: omitted, attempts: attempts, expiresAt: expiresAt})
	}
}

func (g *Guard) observe(res Result, err error, start time.Time) {
	if g.opts.observer == nil {
		return
	}
	g.opts.observer(Event{
		Namespace: g.namespace,
		Outcome:   res.Outcome,
		Attempts:  res.Attempts,
		Cached:    res.Cached,
		Duration:  g.opts.now().Sub(start),
		Err:       err,
	})
}

// observePanic reports a panicking effect as Failed and lets the panic go
// on; it must be deferred directly.
func (g *Guard) observePanic(start time.Time) {
	if p := recover(); p != nil {
		g.observe(Result{Outcome: Failed}, fmt.Errorf("idem: effect panicked: %v", p), start)
		panic(p)
	}
}

// outcomeOf maps a store error to an outcome.
func outcomeOf(err error) Outcome {
	switch {
	case errors.Is(err, ErrLeaseLost):
		return LeaseLost
	case errors.Is(err, ErrInProgress):
		return InProgress
	case errors.Is(err, ErrInvalid):
		return Rejected
	default:
		return Failed
	}
}

// writeContext is the context for writing the receipt or releasing: the
// caller's deadline (the Lambda's) still bounds it, but a cancelled effect
// must not stop us from recording what happened.
func writeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	wctx := context.WithoutCancel(ctx)
	if d, ok := ctx.Deadline(); ok {
		return context.WithDeadline(wctx, d)
	}
	return context.WithTimeout(wctx, 30*time.Second)
}

func validNamespace(ns string) error {
	switch {
	case ns == "":
		return fmt.Errorf("%w: empty namespace", ErrInvalid)
	case len(ns) > MaxNamespaceLen:
		return fmt.Errorf("%w: namespace is %d bytes, more than %d", ErrInvalid, len(ns), MaxNamespaceLen)
	case strings.Contains(ns, KeySeparator):
		return fmt.Errorf("%w: namespace %q contains the separator %q", ErrInvalid, ns, KeySeparator)
	case !utf8.ValidString(ns):
		return fmt.Errorf("%w: namespace is not valid UTF-8", ErrInvalid)
	}
	return nil
}

// validCall checks the arguments of Do and DoTx before any store call.
func validCall(key string, nilFunc bool) error {
	switch {
	case nilFunc:
		return fmt.Errorf("%w: nil function", ErrInvalid)
	case key == "":
		return fmt.Errorf("%w: empty key", ErrInvalid)
	case len(key) > MaxKeyLen:
		return fmt.Errorf("%w: key is %d bytes, more than %d", ErrInvalid, len(key), MaxKeyLen)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: key is not valid UTF-8", ErrInvalid)
	}
	return nil
}

// fingerprint returns the fingerprint stored for payload: base64 of its
// SHA-256, or "" for an empty payload (no check).
func fingerprint(payload []byte) string {
	if len(payload) == 0 {
		return ""
	}
	sum := sha256.Sum256(payload)
	return base64.RawStdEncoding.EncodeToString(sum[:])
}

func newToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("idem: lease token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Lease describes the attempt running an effect. Attempt increases with
// every acquire of a key while its record is retained (it starts again at 1
// once TTL has deleted it), so it can serve as a fencing token for a
// downstream system that rejects writes from older attempts.
type Lease struct {
	Key     string // the caller's key, e.g. for an Idempotency-Key header
	Token   string
	Attempt int
	Until   time.Time
}

type leaseKey struct{}

// LeaseFromContext returns the lease of the attempt running the effect; it
// is set in the context Do passes to the effect.
func LeaseFromContext(ctx context.Context) (Lease, bool) {
	l, ok := ctx.Value(leaseKey{}).(Lease)
	return l, ok
}
