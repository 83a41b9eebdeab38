package consumer

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// Option configures a Handler, built by Start or New.
type Option func(*options)

type options struct {
	metrics   io.Writer
	logger    *slog.Logger
	now       func() time.Time
	guardOpts []idem.Option
	batchOpts []sqsbatch.Option
}

// WithMetrics sets where the EMF lines go. Default os.Stdout, which Lambda
// sends to CloudWatch Logs.
func WithMetrics(w io.Writer) Option { return func(o *options) { o.metrics = w } }

// WithLogger sets the logger. Default: slog JSON on os.Stdout at LOG_LEVEL.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithClock sets the clock of the Guard and of the metrics. Default
// time.Now.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithGuardOptions adds idem options (an observer, the error text kept on
// a failed record…) after those the configuration implies.
func WithGuardOptions(opts ...idem.Option) Option {
	return func(o *options) { o.guardOpts = append(o.guardOpts, opts...) }
}

// WithBatchOptions adds sqsbatch options (what is fingerprinted…) after
// those the configuration implies.
func WithBatchOptions(opts ...sqsbatch.Option) Option {
	return func(o *options) { o.batchOpts = append(o.batchOpts, opts...) }
}

func resolve(cfg Config, opts []Option) options {
	o := options{metrics: os.Stdout, now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: cfg.LogLevel}))
	}
	return o
}

// Handler handles the SQS batches of a consumer: each record through the
// Guard in the configured mode, the failed ones reported as batch item
// failures, one EMF line and one summary line per batch. It is safe for
// concurrent use.
type Handler struct {
	batch     *sqsbatch.Handler
	log       *slog.Logger
	metrics   *emf
	logBodies bool
}

// New builds the Handler Start runs, without Lambda and without AWS: for
// tests, and for a main that builds its own store. store must support
// transactions (idem.TxStore) in transactional mode. An effect that does
// not fit cfg (no function for its mode, no key) is a *ConfigError.
func New(cfg Config, store idem.Store, eff Effect, opts ...Option) (*Handler, error) {
	e := NewEnv(func(string) string { return "" })
	cfg.checkChoices(e)
	eff.check(cfg, e)
	if store == nil {
		return nil, fmt.Errorf("%w: nil store", ErrConfig)
	}
	if cfg.Mode == ModeTransactional && !store.Capabilities().Transactions {
		e.Fail(EnvMode, "%s, but the store has no transactions", ModeTransactional)
	}
	if err := e.Err("consumer"); err != nil {
		return nil, err
	}
	o := resolve(cfg, opts)
	guardOpts := append(cfg.Options(), idem.WithClock(o.now), idem.WithUnknownOutcome(cfg.policy()))
	g, err := idem.New(store, cfg.Namespace, append(guardOpts, o.guardOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("consumer: guard: %w", err)
	}
	h := &Handler{
		log:       o.logger,
		metrics:   &emf{w: o.metrics, function: lambdacontext.FunctionName, namespace: cfg.Namespace, now: o.now},
		logBodies: cfg.LogBodies,
	}
	batchOpts := []sqsbatch.Option{
		sqsbatch.WithConcurrency(cfg.BatchConcurrency),
		sqsbatch.WithLogger(o.logger),
		sqsbatch.WithRecordHook(h.record),
	}
	if cfg.MaxReceiveCount > 0 {
		batchOpts = append(batchOpts, sqsbatch.WithMaxReceiveCount(cfg.MaxReceiveCount))
	}
	if eff.Reconcile != nil && cfg.Mode == ModeLease {
		batchOpts = append(batchOpts, sqsbatch.WithReconcile(eff.Reconcile))
	}
	if cfg.VisibilityTimeout > 0 {
		batchOpts = append(batchOpts, sqsbatch.WithStoreBackoff(cfg.VisibilityTimeout))
	}
	batchOpts = append(batchOpts, o.batchOpts...)
	key := eff.key(cfg)
	if cfg.Mode == ModeTransactional {
		h.batch, err = sqsbatch.NewTx(g, key, eff.Tx, batchOpts...)
	} else {
		h.batch, err = sqsbatch.New(g, key, eff.Lease, batchOpts...)
	}
	if err != nil {
		return nil, fmt.Errorf("consumer: batch handler: %w", err)
	}
	reconciles := eff.Reconcile != nil && cfg.Mode == ModeLease
	o.logger.LogAttrs(context.Background(), readyLevel(o.logger), LogReady,
		slog.String(ReadyMode, cfg.Mode), slog.String(ReadyUnknownOutcome, cfg.UnknownOutcome),
		slog.Bool(ReadyReconcile, reconciles), slog.String(ReadyGuarantee, Guarantee(cfg.Mode, cfg.UnknownOutcome, reconciles)),
		slog.String(ReadyNamespace, cfg.Namespace), slog.String(ReadyStore, cmp.Or(cfg.Store, DefaultStore)))
	return h, nil
}

// readyLevel is the level of the LogReady line: INFO, or the lowest level
// l writes when it drops INFO (LOG_LEVEL=WARN), so that a proof can read
// what the consumer promises whatever its log level.
func readyLevel(l *slog.Logger) slog.Level {
	level := slog.LevelInfo
	for level < slog.LevelError && !l.Enabled(context.Background(), level) {
		level += slog.LevelWarn - slog.LevelInfo
	}
	return level
}

// batchState is what the record hook adds to, one per Handle call.
type batchState struct {
	counts counts
	bodies map[string]string // message id → body, only with LOG_BODIES
	log    *slog.Logger
}

type batchStateKey struct{}

// Handle is the Lambda handler. The per-record lines are sqsbatch's; this
// adds the EMF line and a summary of the batch.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	log, requestID := h.log, ""
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		requestID = lc.AwsRequestID
		log = log.With(slog.String(attrRequestID, requestID))
	}
	st := &batchState{log: log}
	if h.logBodies {
		st.bodies = make(map[string]string, len(ev.Records))
		for _, r := range ev.Records {
			st.bodies[r.MessageId] = r.Body
		}
	}
	resp, err := h.batch.Handle(context.WithValue(ctx, batchStateKey{}, st), ev)

	n := st.counts.snapshot()
	if merr := h.metrics.emit(n, requestID); merr != nil {
		log.WarnContext(ctx, "metrics not written", slog.String("error", merr.Error()))
	}
	attrs := []slog.Attr{slog.Int("records", len(ev.Records)), slog.Int("failed", len(resp.BatchItemFailures))}
	for _, name := range Metrics() {
		if n[name] > 0 {
			attrs = append(attrs, slog.Int(name, n[name]))
		}
	}
	log.LogAttrs(ctx, slog.LevelInfo, "batch done", attrs...)
	return resp, err
}

func (h *Handler) record(ctx context.Context, r sqsbatch.RecordResult) {
	st, ok := ctx.Value(batchStateKey{}).(*batchState)
	if !ok {
		return
	}
	st.counts.add(r)
	if r.Failed && st.bodies != nil {
		// LOG_BODIES is an opt-in for debugging: bodies may hold personal data.
		st.log.InfoContext(ctx, "failed record body",
			slog.String("message_id", r.MessageID), slog.String("body", st.bodies[r.MessageID]))
	}
}
