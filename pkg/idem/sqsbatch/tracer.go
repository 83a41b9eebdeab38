package sqsbatch

import (
	"context"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// Tracer follows batches and records, for example as OpenTelemetry spans
// (the module pkg/idem/otelidem implements it). Batch is called once per
// Handle, Record once per record that runs, with the batch's context; the
// context each returns is the one the record's work runs under, so the
// effect's own calls are children of the record's span. The functions they
// return are called when the batch or record is done. A Tracer must be safe
// for concurrent use.
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
