package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// Effect is the business effect (effect.go), run at most once per order
// key: Issue in lease mode, IssueTx in transactional mode. The key is the
// order id; msg is the record, whose body orderKey has already checked.
type Effect interface {
	Issue(ctx context.Context, key string, msg events.SQSMessage) ([]byte, error)
	IssueTx(ctx context.Context, key string, msg events.SQSMessage) (idem.TxEffect, error)
}

// Consumer handles SQS batches of orders: each order's gift card is issued
// exactly once (transactional mode), or once except for the documented
// window of a crash between the effect and its receipt (lease mode).
type Consumer struct {
	batch     *sqsbatch.Handler
	log       *slog.Logger
	metrics   *Metrics
	logBodies bool
}

// NewConsumer builds the consumer around effect. store must implement
// idem.TxStore in transactional mode; metricsOut receives the EMF lines
// (stdout in Lambda).
func NewConsumer(cfg contract.Consumer, store idem.Store, effect Effect, log *slog.Logger, metricsOut io.Writer) (*Consumer, error) {
	g, err := idem.New(store, cfg.Namespace, cfg.Options()...)
	if err != nil {
		return nil, fmt.Errorf("consumer: guard: %w", err)
	}
	c := &Consumer{
		log:       log,
		metrics:   NewMetrics(metricsOut, lambdacontext.FunctionName, cfg.Namespace),
		logBodies: cfg.LogBodies,
	}
	opts := []sqsbatch.Option{
		sqsbatch.WithConcurrency(cfg.Concurrency),
		sqsbatch.WithLogger(log),
		sqsbatch.WithRecordHook(c.record),
	}
	if cfg.Mode == contract.ModeTransactional {
		c.batch, err = sqsbatch.NewTx(g, orderKey, effect.IssueTx, opts...)
	} else {
		c.batch, err = sqsbatch.New(g, orderKey, effect.Issue, opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("consumer: batch handler: %w", err)
	}
	return c, nil
}

var orderIDKey = sqsbatch.FirstOf(sqsbatch.Attribute("orderId"), sqsbatch.JSONField("orderId"))

// orderKey is the idempotency key: the orderId message attribute the
// producer sets, else the body's orderId. It also checks that the body is
// an order, so a malformed message fails before it takes a record.
func orderKey(msg events.SQSMessage) (string, error) {
	key, err := orderIDKey(msg)
	if err != nil {
		return "", err
	}
	if _, err := parseOrder(key, msg.Body); err != nil {
		return "", err
	}
	return key, nil
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
func (c *Consumer) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	log := c.log
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		log = log.With(slog.String("request_id", lc.AwsRequestID))
	}
	st := &batchState{log: log}
	if c.logBodies {
		st.bodies = make(map[string]string, len(ev.Records))
		for _, r := range ev.Records {
			st.bodies[r.MessageId] = r.Body
		}
	}
	resp, err := c.batch.Handle(context.WithValue(ctx, batchStateKey{}, st), ev)

	if merr := c.metrics.emit(&st.counts); merr != nil {
		log.WarnContext(ctx, "metrics not written", slog.String("error", merr.Error()))
	}
	n := st.counts.snapshot()
	attrs := []slog.Attr{slog.Int("records", len(ev.Records)), slog.Int("failed", len(resp.BatchItemFailures))}
	for _, name := range contract.OutcomeMetrics() {
		if n[name] > 0 {
			attrs = append(attrs, slog.Int(name, n[name]))
		}
	}
	log.LogAttrs(ctx, slog.LevelInfo, "batch done", attrs...)
	return resp, err
}

func (c *Consumer) record(ctx context.Context, r sqsbatch.RecordResult) {
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
