package sqsbatch

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// Tracer follows batches and records, for example as OpenTelemetry spans
// (the module pkg/idem/otelidem implements it). Batch is called once per
// Handle, Record once per record that runs, with the batch's context; the
// context each returns is the one the record's work runs under, so the
// effect's own calls are children of the record's span. The functions they
// return are called when the batch or record is done. A Tracer must be safe
// for concurrent use. A Tracer that panics is logged at ERROR ("tracer
// panicked") and the batch or record goes on untraced: tracing never fails
// a record, nor loses the batch response.
type Tracer interface {
	Batch(ctx context.Context, ev events.SQSEvent) (context.Context, func(events.SQSEventResponse, error))
	Record(ctx context.Context, msg events.SQSMessage) (context.Context, func(RecordResult))
}

// WithTracer sets the Tracer. Default none.
func WithTracer(t Tracer) Option {
	return func(o *options) error {
		if t == nil {
			return fmt.Errorf("%w: nil tracer", idem.ErrInvalid)
		}
		o.tracer = t
		return nil
	}
}

// A Tracer runs outside the effect's recover, on the workers' goroutines
// and around the batch response: a panic there would take the process down,
// and every record of the batch would come back, the done ones with the
// rest. So every call into it goes through safely.

// traceBatch starts the batch's trace; end is never nil.
func (h *Handler) traceBatch(ctx context.Context, log *slog.Logger, ev events.SQSEvent) (_ context.Context, end func(events.SQSEventResponse, error)) {
	if h.opts.tracer == nil {
		return ctx, func(events.SQSEventResponse, error) {}
	}
	tctx, tend := ctx, func(events.SQSEventResponse, error) {}
	safely(ctx, log, "Batch", func() { tctx, tend = h.opts.tracer.Batch(ctx, ev) })
	if tctx == nil || tend == nil {
		tctx, tend = ctx, func(events.SQSEventResponse, error) {}
	}
	return tctx, func(resp events.SQSEventResponse, err error) {
		safely(ctx, log, "the batch's end", func() { tend(resp, err) })
	}
}

// traceRecord starts a record's trace; end is never nil.
func (h *Handler) traceRecord(ctx context.Context, log *slog.Logger, msg events.SQSMessage) (_ context.Context, end func(RecordResult)) {
	if h.opts.tracer == nil {
		return ctx, func(RecordResult) {}
	}
	log = log.With(slog.String("message_id", msg.MessageId))
	tctx, tend := ctx, func(RecordResult) {}
	safely(ctx, log, "Record", func() { tctx, tend = h.opts.tracer.Record(ctx, msg) })
	if tctx == nil || tend == nil {
		tctx, tend = ctx, func(RecordResult) {}
	}
	return tctx, func(r RecordResult) {
		safely(ctx, log, "the record's end", func() { tend(r) })
	}
}

// safely runs a call into the Tracer; a panic in it is logged, not raised.
func safely(ctx context.Context, log *slog.Logger, call string, fn func()) {
	defer func() {
		if p := recover(); p != nil {
			log.ErrorContext(ctx, "tracer panicked", slog.String("call", call), slog.Any("panic", p))
		}
	}()
	fn()
}
