package idem

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Func is the effect guarded by Do. It runs at most once per key while the
// receipt is retained, under a context that ends before the lease does. Its
// result is stored and replayed to duplicates.
type Func func(ctx context.Context) ([]byte, error)

// TxEffect is what a TxFunc returns: the effect as store writes, committed
// together with the receipt.
type TxEffect struct {
	// Writes are store-specific; dynamostore takes types.TransactWriteItem.
	Writes []any
	// Result is stored and replayed to duplicates.
	Result []byte
}

// TxFunc computes the writes of a transactional effect. It must have no
// other side effect: it runs for every delivery, duplicates included, and
// only the commit decides whether its writes happen.
type TxFunc func(ctx context.Context) (TxEffect, error)

// Guard runs effects at most once per (namespace, key). It is safe for
// concurrent use; create one per namespace and reuse it across invocations.
type Guard struct {
	store     Store
	caps      Capabilities
	namespace string
	opts      options
	cache     *lru[cacheEntry] // nil without WithCache
	owed      *owedReceipts    // effects run, receipts not written
	tx        TxStore          // nil unless the store commits transactions
}

// New returns a Guard over store for namespace. The namespace separates the
// consumers that share a table; it cannot be empty or contain KeySeparator.
// Options that the store cannot honour, or that contradict each other, are
// ErrInvalid.
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
	caps := store.Capabilities()
	if err := o.check(caps); err != nil {
		return nil, err
	}
	g := &Guard{store: store, caps: caps, namespace: namespace, opts: o, owed: newOwedReceipts()}
	g.tx, _ = store.(TxStore)
	if !caps.Transactions {
		g.tx = nil
	}
	if o.cacheSize > 0 {
		g.cache = newLRU[cacheEntry](o.cacheSize)
	}
	return g, nil
}

// Namespace returns the Guard's namespace.
func (g *Guard) Namespace() string { return g.namespace }

// SafetyMargin returns the time the Guard keeps between an effect's end and
// its lease's (WithSafetyMargin): an attempt needs more than that left.
func (g *Guard) SafetyMargin() time.Duration { return g.opts.margin }

// Transactional reports whether DoTx can run: the Guard's store commits an
// effect's writes with its receipt.
func (g *Guard) Transactional() bool { return g.tx != nil }

// Do runs fn unless a receipt for key exists, and reports what happened.
//
// payload is fingerprinted: reusing key with a different payload returns
// ErrPayloadMismatch instead of a duplicate. Pass nil to skip the check.
//
// The error is nil for Executed, Duplicate, Reconciled and Rerun. Otherwise it
// wraps ErrInProgress, ErrPayloadMismatch, ErrLeaseLost, ErrUnconfirmed,
// ErrHeld, ErrStore, ErrInvalid, or fn's own error (Failed).
//
// An error of fn's releases the record: FAILED when it is Definite (the
// next delivery runs fn at once), UNKNOWN otherwise (the next attempt
// reconciles with the Reconcile option, or follows WithUnknownOutcome).
func (g *Guard) Do(ctx context.Context, key string, payload []byte, fn Func, opts ...CallOption) (Result, error) {
	start := g.opts.now()
	defer g.observePanic(ctx, start)
	var c call
	for _, opt := range opts {
		opt(&c)
	}
	res, err := g.do(ctx, key, payload, fn, c, start)
	g.observe(ctx, res, err, start)
	return res, err
}

// DoTx is transactional mode: fn returns the effect as store writes, and the
// store commits them with the COMPLETED receipt in one transaction, or not at
// all. There is no lease and no window: the effect happens exactly once. One
// store request for a new key, one for a duplicate.
//
// The store must declare Capabilities.Transactions (ErrNotTransactional
// otherwise).
func (g *Guard) DoTx(ctx context.Context, key string, payload []byte, fn TxFunc) (Result, error) {
	start := g.opts.now()
	defer g.observePanic(ctx, start)
	res, err := g.doTx(ctx, key, payload, fn, start)
	g.observe(ctx, res, err, start)
	return res, err
}

func (g *Guard) do(ctx context.Context, key string, payload []byte, fn Func, c call, now time.Time) (Result, error) {
	skey, err := g.validCall(key, fn == nil)
	if err != nil {
		return Result{Outcome: Rejected}, err
	}
	fp := fingerprint(payload)
	if res, ok, err := g.fromCache(skey, fp, now); ok {
		return res, err
	}
	if res, ok, err := g.fromOwed(ctx, skey, fp, now); ok {
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
	if err := cancelled(ctx); err != nil {
		return Result{Outcome: Failed}, fmt.Errorf("idem: acquire %s: %w", skey, err)
	}
	rec, acquired, err := g.store.Acquire(ctx, acq)
	if err != nil {
		return g.storeFailed(ctx, "acquire", skey, err)
	}
	if !acquired && rec.Status == StatusInProgress && rec.Lease == token {
		// Our own write: the request landed, its response was lost, and the
		// retry found the record it had written.
		acquired = true
	}
	if !acquired {
		return g.conflict(skey, rec, fp, now)
	}

	effectCtx, cancel := context.WithDeadline(ctx, effectEnd)
	defer cancel()
	effectCtx = context.WithValue(effectCtx, leaseKey{}, Lease{
		Key: key, Token: token, Attempt: rec.Attempts, Until: acq.LeaseUntil, Previous: previous(rec),
	})
	r := receipt{token: token, fingerprint: fp, attempts: rec.Attempts, leaseUntil: leaseUntil,
		completion: Completion{ExpiresAt: acq.ExpiresAt}}
	stillUnknown := false
	if unknownTakeover(rec) {
		res, done, still, err := g.settleUnknown(ctx, effectCtx, skey, r, c.reconcile)
		if done {
			return res, err
		}
		stillUnknown = still
		if err := effectCtx.Err(); err != nil {
			// The reconcile used the effect's time up: the effect must not
			// start with an ended context.
			return g.noTimeAfterReconcile(ctx, skey, r, err)
		}
	}
	value, err := g.run(effectCtx, fn, func(reason error) error {
		status := StatusUnknown
		// An error the effect returned once its context had ended may be
		// the deadline's, whatever cause it carries: definite only with
		// proof that the request never left.
		if IsDefinite(reason) && !stillUnknown && (effectCtx.Err() == nil || NotSent(reason)) {
			status = StatusFailed
		}
		return g.release(ctx, skey, token, status, g.opts.errorText(reason), leaseUntil)
	})
	if err != nil {
		return Result{Outcome: Failed, Attempts: rec.Attempts}, err
	}
	r.completion.Result = value
	if len(value) > g.opts.maxResult {
		r.completion.Result, r.completion.ResultOmitted = nil, true
	}
	res, err := g.complete(ctx, skey, r, value)
	if stillUnknown {
		// Run again over an outcome nobody could settle: the window.
		res.Rerun = true
		if res.Outcome == Executed {
			res.Outcome = Rerun
		}
	}
	return res, err
}

func (g *Guard) doTx(ctx context.Context, key string, payload []byte, fn TxFunc, now time.Time) (Result, error) {
	ts := g.tx
	if ts == nil {
		return Result{Outcome: Rejected}, fmt.Errorf("%w: %w", ErrInvalid, ErrNotTransactional)
	}
	skey, err := g.validCall(key, fn == nil)
	if err != nil {
		return Result{Outcome: Rejected}, err
	}
	fp := fingerprint(payload)
	if res, ok, err := g.fromCache(skey, fp, now); ok {
		return res, err
	}

	if err := cancelled(ctx); err != nil {
		return Result{Outcome: Failed}, fmt.Errorf("idem: commit %s: %w", skey, err)
	}
	var tx TxEffect
	_, err = g.run(ctx, func(ctx context.Context) ([]byte, error) {
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
	if errors.Is(err, ErrResultTooLarge) && !t.ResultOmitted {
		t.Result, t.ResultOmitted = nil, true
		rec, committed, err = ts.Commit(ctx, t)
	}
	switch {
	case errors.Is(err, ErrTxAborted):
		return Result{Outcome: Failed}, fmt.Errorf("idem: commit %s: %w", skey, err)
	case err != nil:
		return g.storeFailed(ctx, "commit", skey, err)
	case !committed:
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
		g.rememberReceipt(skey, rec)
		res.Outcome, res.Value, res.ResultOmitted, res.Resolved = Duplicate, rec.Result, rec.ResultOmitted, rec.Resolved
		return res, nil
	}
	if rec.Status == StatusHeld {
		res.Outcome = Held
		return res, fmt.Errorf("%w: %s (%s)", ErrHeld, skey, rec.LastError)
	}
	res.Outcome, res.LeaseUntil = InProgress, rec.LeaseUntil
	if rec.LeaseUntil.After(now) {
		return res, fmt.Errorf("%w: %s leased for another %s", ErrInProgress, skey, rec.LeaseUntil.Sub(now).Round(time.Millisecond))
	}
	return res, fmt.Errorf("%w: %s", ErrInProgress, skey)
}

// run calls fn; when fn fails or panics it releases the record with the
// reason (release is nil in transactional mode, where nothing is held). A
// panic is re-raised after the release.
func (g *Guard) run(ctx context.Context, fn Func, release func(reason error) error) (value []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			if release != nil {
				_ = release(panicError{p})
			}
			panic(p)
		}
	}()
	value, err = fn(ctx)
	if err != nil && release != nil {
		if rerr := release(err); rerr != nil {
			return nil, errors.Join(err, fmt.Errorf("idem: release: %w", storeError(rerr)))
		}
	}
	return value, err
}

// release gives the record up as status (FAILED, UNKNOWN or HELD), with
// text (what WithErrorText keeps of the reason) as its last error, valid
// UTF-8 as every store keeps strings, fenced like the receipt.
func (g *Guard) release(ctx context.Context, skey, token string, status Status, text string, leaseUntil time.Time) error {
	ctx, cancel := g.writeContext(ctx, leaseUntil)
	defer cancel()
	text = truncate(strings.ToValidUTF8(text, "\uFFFD"), MaxLastErrorLen)
	return g.store.Release(ctx, skey, token, Released{Status: status, Reason: text, Now: g.opts.now()})
}

// previous is what an attempt that wrote rec took over, for its Lease: an
// expired receipt counts as none.
func previous(rec Record) Status {
	if rec.PrevStatus == StatusCompleted {
		return ""
	}
	return rec.PrevStatus
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
	return Result{Outcome: Duplicate, Value: slices.Clone(e.result), ResultOmitted: e.omitted, Resolved: e.resolved, Attempts: e.attempts, Cached: true}, true, nil
}

func (g *Guard) remember(skey, fp string, result []byte, omitted bool, attempts int, expiresAt time.Time) {
	if g.cache != nil {
		g.cache.put(skey, cacheEntry{fingerprint: fp, result: slices.Clone(result), omitted: omitted, attempts: attempts, expiresAt: expiresAt})
	}
}

func (g *Guard) observe(ctx context.Context, res Result, err error, start time.Time) {
	if g.opts.observer == nil {
		return
	}
	g.opts.observer(ctx, Event{
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
func (g *Guard) observePanic(ctx context.Context, start time.Time) {
	if p := recover(); p != nil {
		g.observe(ctx, Result{Outcome: Failed}, fmt.Errorf("idem: effect panicked: %v", p), start)
		panic(p)
	}
}
