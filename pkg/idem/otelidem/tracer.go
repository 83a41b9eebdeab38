package otelidem

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// Tracer is an sqsbatch.Tracer that makes OpenTelemetry spans: one per batch
// and one per record (see the package documentation for the span model).
// It is safe for concurrent use.
type Tracer struct {
	tracer trace.Tracer
	opts   options
}

var _ sqsbatch.Tracer = (*Tracer)(nil)

// NewTracer returns a Tracer; pass it to sqsbatch.WithTracer.
func NewTracer(opts ...Option) (*Tracer, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	return &Tracer{tracer: o.provider.Tracer(ScopeName), opts: o}, nil
}

// Batch starts the batch's span, linked to the producer context of every
// record that carries one, as the messaging conventions ask of a span that
// processes a batch.
func (t *Tracer) Batch(ctx context.Context, ev events.SQSEvent) (context.Context, func(events.SQSEventResponse, error)) {
	var links []trace.Link
	for _, msg := range ev.Records {
		if _, producer, ok := t.extract(ctx, msg); ok {
			links = append(links, trace.Link{SpanContext: producer})
		}
	}
	attrs := append(processing(queueOf(ev)), semconv.MessagingBatchMessageCount(len(ev.Records)))
	ctx, span := t.tracer.Start(ctx, t.opts.batchName(ev),
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...), trace.WithLinks(links...))
	return ctx, func(resp events.SQSEventResponse, err error) {
		defer span.End()
		span.SetAttributes(failuresKey.Int(len(resp.BatchItemFailures)))
		// Failed records are routine (they come back) and have their own
		// error spans; the batch fails only when Handle fails it whole.
		if err != nil {
			span.SetAttributes(semconv.ErrorTypeKey.String(batchErrorType(err)))
			span.SetStatus(codes.Error, err.Error()) // sqsbatch's own text: no business data
		}
	}
}

// Record starts the record's span. Its parent is the producer's span when
// the message carries a sampled producer context, so that one order is one
// trace from the producer's send to the effect's own calls; the span is
// then linked to the batch's. Without one, or when the producer's trace is
// not recorded, its parent is the batch span (linked to the producer's
// context if any): a consumer never loses its spans to a producer's
// sampling decision.
func (t *Tracer) Record(ctx context.Context, msg events.SQSMessage) (context.Context, func(sqsbatch.RecordResult)) {
	batch := trace.SpanFromContext(ctx)
	pctx, producer, found := t.extract(ctx, msg)

	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(recordAttributes(msg)...)}
	parent := trace.ContextWithSpan(pctx, batch)
	switch {
	case found && producer.IsSampled():
		parent = pctx
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: batch.SpanContext()}))
	case found:
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: producer}))
	}
	ctx, span := t.tracer.Start(parent, t.opts.recordName(msg), opts...)
	return ctx, func(r sqsbatch.RecordResult) {
		defer span.End()
		span.SetAttributes(
			outcomeKey.String(outcomeName(r.Outcome)),
			attemptsKey.Int(r.Attempts),
			failedKey.Bool(r.Failed),
		)
		if r.Requeued {
			span.SetAttributes(requeuedKey.Bool(true))
		}
		if r.Key != "" && t.opts.storageKey != nil {
			span.SetAttributes(storageKeyKey.String(t.opts.storageKey(r.Key)))
		}
		// Unconfirmed succeeds (the message is deleted) but is an error
		// all the same: the receipt is missing, and operators alarm on it.
		if r.Failed || r.Outcome == idem.Unconfirmed {
			kind := errorType(r)
			span.SetAttributes(semconv.ErrorTypeKey.String(kind))
			if t.opts.errorText != nil && r.Err != nil {
				kind = t.opts.errorText(r.Err)
			}
			span.SetStatus(codes.Error, kind)
		}
	}
}

// extract reads the producer's context that msg carries into ctx (so that
// whatever else the propagator reads, such as baggage, reaches the effect
// too); found is false when msg carries none.
func (t *Tracer) extract(ctx context.Context, msg events.SQSMessage) (pctx context.Context, producer trace.SpanContext, found bool) {
	pctx = t.opts.propagator.Extract(ctx, carrier{msg: &msg})
	producer = trace.SpanContextFromContext(pctx)
	return pctx, producer, producer.IsValid() && !producer.Equal(trace.SpanContextFromContext(ctx))
}
