package otelidem

import (
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// ScopeName is the instrumentation scope of the spans a Tracer starts.
const ScopeName = "github.com/exactlyonce/sqsidem/pkg/idem/otelidem"

// Option configures a Tracer.
type Option func(*options) error

type options struct {
	provider   trace.TracerProvider
	propagator propagation.TextMapPropagator
	batchName  func(events.SQSEvent) string
	recordName func(events.SQSMessage) string
	storageKey func(key string) string // nil: no storage key on record spans
	errorText  func(error) string      // nil: the error's type (errorType)
}

func defaultOptions() options {
	return options{
		provider: otel.GetTracerProvider(),
		// The composite's last propagator that finds a context wins: a
		// traceparent the producer wrote (its send span) beats the
		// AWSTraceHeader SQS copied from the sender's X-Ray segment.
		propagator: propagation.NewCompositeTextMapPropagator(XRay{}, propagation.TraceContext{}),
		batchName:  func(ev events.SQSEvent) string { return spanName("sqs batch", queueOf(ev)) },
		recordName: func(msg events.SQSMessage) string { return spanName("sqs record", queueName(msg.EventSourceARN)) },
	}
}

// WithTracerProvider sets where spans go. Default otel.GetTracerProvider(),
// read when NewTracer is called.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) error {
		if tp == nil {
			return fmt.Errorf("%w: nil tracer provider", idem.ErrInvalid)
		}
		o.provider = tp
		return nil
	}
}

// WithPropagator sets how a record's producer context is read. It is given
// the message attributes of type String by name, and the AWSTraceHeader
// system attribute under X-Ray's header name, X-Amzn-Trace-Id. Default:
// XRay then propagation.TraceContext, so traceparent wins when a message
// has both. A propagator that leaves out XRay ignores AWSTraceHeader.
func WithPropagator(p propagation.TextMapPropagator) Option {
	return func(o *options) error {
		if p == nil {
			return fmt.Errorf("%w: nil propagator", idem.ErrInvalid)
		}
		o.propagator = p
		return nil
	}
}

// WithBatchSpanName names batch spans. Default "sqs batch <queue name>".
// Keep names low in cardinality: never a message id.
func WithBatchSpanName(fn func(events.SQSEvent) string) Option {
	return func(o *options) error {
		if fn == nil {
			return fmt.Errorf("%w: nil batch span name function", idem.ErrInvalid)
		}
		o.batchName = fn
		return nil
	}
}

// WithRecordSpanName names record spans. Default "sqs record <queue name>".
func WithRecordSpanName(fn func(events.SQSMessage) string) Option {
	return func(o *options) error {
		if fn == nil {
			return fmt.Errorf("%w: nil record span name function", idem.ErrInvalid)
		}
		o.recordName = fn
		return nil
	}
}

// WithStorageKey puts the record's storage key (idem.storage_key) on its
// span, so an operator can go from a trace to the record in the table:
// pass the Guard's StorageKey method. The idempotency key itself is never
// put on a span: it is often a business identifier.
func WithStorageKey(fn func(key string) string) Option {
	return func(o *options) error {
		if fn == nil {
			return fmt.Errorf("%w: nil storage key function", idem.ErrInvalid)
		}
		o.storageKey = fn
		return nil
	}
}

// WithErrorText sets the status description of a failed record's span.
// The default is the error's type (the error.type attribute), not its text:
// an effect's error often carries business identifiers, and traces are
// exported to wider audiences than logs. Pass (error).Error when yours
// carry nothing personal.
func WithErrorText(fn func(error) string) Option {
	return func(o *options) error {
		if fn == nil {
			return fmt.Errorf("%w: nil error text function", idem.ErrInvalid)
		}
		o.errorText = fn
		return nil
	}
}
