package sqsbatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// DefaultConcurrency is how many records of a batch run at once by default.
const DefaultConcurrency = 10

var (
	// ErrPanic wraps the value of a panic in the effect or the key
	// function; the record fails.
	ErrPanic = errors.New("sqsbatch: panic")
	// ErrGroupFailed: an earlier record of the same unit (the same FIFO
	// message group, or on a standard queue the same key) failed in this
	// batch, so this one was not run (it would overtake it). On a standard
	// queue a record on its last receive (WithMaxReceiveCount) runs anyway,
	// rather than go to the dead-letter queue unrun.
	ErrGroupFailed = errors.New("sqsbatch: an earlier record of the same group or key failed")
)

// Func is the effect of one record, run at most once per key (lease mode).
// ctx carries the lease (idem.LeaseFromContext) and ends before it does.
type Func func(ctx context.Context, key string, msg events.SQSMessage) ([]byte, error)

// TxFunc returns the effect of one record as store writes, committed with
// the receipt (transactional mode). It runs for every delivery, duplicates
// included, and must have no side effect of its own.
type TxFunc func(ctx context.Context, key string, msg events.SQSMessage) (idem.TxEffect, error)

// RecordResult is what happened to one record, passed to the
// WithRecordHook function.
type RecordResult struct {
	MessageID string
	// Key is the idempotency key, "" when the KeyFunc found none.
	Key string
	// Outcome is the Guard's. It is idem.Rejected when no key was found, and
	// zero when the record was not run because an earlier record of its
	// FIFO group, or of its key, failed (Err wraps ErrGroupFailed).
	Outcome  idem.Outcome
	Attempts int
	// Value is the effect's result (Executed, Unconfirmed, LeaseLost), or
	// the stored one replayed (Duplicate).
	Value []byte
	// Resolved: on a Duplicate, the receipt was written by an operator
	// (idemctl resolve --done) after checking downstream, not by the
	// effect; Value is nil (idem.Result.Resolved).
	Resolved bool
	// Rerun: the effect ran again over an unknown outcome nobody settled
	// (idem.Result.Rerun): outcome idem.Rerun, or Unconfirmed or LeaseLost
	// when its receipt was not written.
	Rerun bool
	Err   error
	// Failed: the record is reported as a batch item failure.
	Failed bool
	// Requeued: the record met InProgress on its last receive and a
	// delayed copy of its message was sent to its queue (WithRequeue); it
	// is not Failed, and its Outcome stays InProgress.
	Requeued bool
}

// Option configures a Handler.
type Option func(*options) error

type options struct {
	concurrency int
	logger      *slog.Logger
	payload     func(events.SQSMessage) []byte
	hook        func(context.Context, RecordResult)
	tracer      Tracer
	visibility  Visibility
	requeue     Requeue
	deleter     Deleter
	maxReceives int
	// storeBackoff is the base of WithStoreBackoff, 0 without it.
	storeBackoff time.Duration
	reconcile    ReconcileFunc
}

// WithConcurrency bounds how many records of a batch run at once. Default
// DefaultConcurrency. On FIFO queues it bounds the message groups running
// at once.
func WithConcurrency(n int) Option {
	return func(o *options) error {
		if n <= 0 {
			return fmt.Errorf("%w: concurrency %d is not positive", idem.ErrInvalid, n)
		}
		o.concurrency = n
		return nil
	}
}

// WithLogger sets the logger. Default slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return fmt.Errorf("%w: nil logger", idem.ErrInvalid)
		}
		o.logger = l
		return nil
	}
}

// WithPayload sets what is fingerprinted to detect a key reused for other
// content. Default: the body. Return nil to skip the check.
func WithPayload(fn func(events.SQSMessage) []byte) Option {
	return func(o *options) error {
		if fn == nil {
			return fmt.Errorf("%w: nil payload function", idem.ErrInvalid)
		}
		o.payload = fn
		return nil
	}
}

// WithRecordHook calls fn once per record after it is done, with the ctx
// given to Handle, e.g. to count outcomes. fn is called from several
// goroutines at once and must be safe for concurrent use.
func WithRecordHook(fn func(ctx context.Context, r RecordResult)) Option {
	return func(o *options) error {
		if fn == nil {
			return fmt.Errorf("%w: nil record hook", idem.ErrInvalid)
		}
		o.hook = fn
		return nil
	}
}

// Handler runs SQS batches through a Guard. It is safe for concurrent use.
type Handler struct {
	guard *idem.Guard
	key   KeyFunc
	fn    Func
	txfn  TxFunc
	opts  options
}

// New returns a Handler that runs fn for each record in lease mode (any side
// effect), keyed by key.
func New(g *idem.Guard, key KeyFunc, fn Func, opts ...Option) (*Handler, error) {
	if fn == nil {
		return nil, fmt.Errorf("%w: nil function", idem.ErrInvalid)
	}
	return newHandler(g, key, opts, &Handler{fn: fn})
}

// NewTx returns a Handler in transactional mode: fn's writes are committed
// with the receipt in one transaction. The Guard's store must implement
// idem.TxStore.
func NewTx(g *idem.Guard, key KeyFunc, fn TxFunc, opts ...Option) (*Handler, error) {
	if fn == nil {
		return nil, fmt.Errorf("%w: nil function", idem.ErrInvalid)
	}
	if g != nil && !g.Transactional() {
		// Every record would fail with it: say so now.
		return nil, fmt.Errorf("%w: %w", idem.ErrInvalid, idem.ErrNotTransactional)
	}
	return newHandler(g, key, opts, &Handler{txfn: fn})
}

func newHandler(g *idem.Guard, key KeyFunc, opts []Option, h *Handler) (*Handler, error) {
	if g == nil {
		return nil, fmt.Errorf("%w: nil guard", idem.ErrInvalid)
	}
	if key == nil {
		return nil, fmt.Errorf("%w: nil key function", idem.ErrInvalid)
	}
	h.guard, h.key = g, key
	h.opts = options{
		concurrency: DefaultConcurrency,
		logger:      slog.Default(),
		payload:     func(m events.SQSMessage) []byte { return []byte(m.Body) },
	}
	for _, opt := range opts {
		if err := opt(&h.opts); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// withResponseTime ends ctx a little before its deadline, so that every
// record's work, a receipt retried until the deadline included, leaves time
// to return the batch response: past the deadline Lambda drops it, and every
// record of the batch, done or not, comes back. A tenth of the time left,
// at most responseTime.
func withResponseTime(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, deadline.Add(-min(responseTime, time.Until(deadline)/10)))
}

// responseTime is the most withResponseTime keeps for the response:
// writing the logs and metrics and posting the response to the Lambda
// runtime take a few milliseconds.
const responseTime = 250 * time.Millisecond

// ErrStoreDown: every record of the batch failed because the store failed.
// Handle returns it (wrapping idem.ErrStore) so that Lambda counts a function
// error and the event source mapping backs off, instead of polling on at full
// speed against a store that is down.
var ErrStoreDown = errors.New("sqsbatch: every record failed on the store")

// Handle runs the records of ev and returns the failed ones as batch item
// failures. The error is nil, unless every record failed because the store
// failed: then it wraps ErrStoreDown and idem.ErrStore (see the package
// documentation).
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (resp events.SQSEventResponse, err error) {
	resp = events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	if len(ev.Records) == 0 {
		return resp, nil
	}
	invocation := ctx
	ctx, cancel := withResponseTime(ctx)
	defer cancel()
	log := h.opts.logger
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		log = log.With(slog.String("request_id", lc.AwsRequestID))
	}
	ctx, end := h.traceBatch(ctx, log, ev)
	defer func() { end(resp, err) }()

	keys := h.keysOf(ev.Records)
	// A unit runs on one worker, in order: the records of one key on a
	// standard queue, so that a copy in the same batch is a Duplicate at
	// once rather than an InProgress that comes back after the visibility
	// timeout; the records of one message group on a FIFO queue.
	units := split(ev.Records, keys)
	results := make([]RecordResult, len(ev.Records)) // each index written by one worker
	late, cancelLate := afterRecords(ctx, invocation)
	defer cancelLate()
	work := make(chan []int)
	var wg sync.WaitGroup
	for range min(h.opts.concurrency, len(units)) {
		wg.Go(func() {
			for unit := range work {
				h.runUnit(ctx, late, log, ev.Records, keys, unit, results)
			}
		})
	}
	for _, unit := range units {
		work <- unit
	}
	close(work)
	wg.Wait()

	storeDown := true
	for i, r := range results {
		if r.Failed {
			resp.BatchItemFailures = append(resp.BatchItemFailures,
				events.SQSBatchItemFailure{ItemIdentifier: ev.Records[i].MessageId})
		}
		storeDown = storeDown && r.Failed && (r.Outcome == idem.StoreError || errors.Is(r.Err, ErrGroupFailed))
	}
	if storeDown {
		log.ErrorContext(ctx, "batch failed: the store is failing", slog.Int("records", len(results)))
		return resp, fmt.Errorf("%w (%d records): %w", ErrStoreDown, len(results), idem.ErrStore)
	}
	return resp, nil
}
