package otelidem

import (
	"context"

	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// Observe is an idem.Observer that adds every outcome of a Guard to the span
// in the call's context as an event named after it ("idem.executed",
// "idem.duplicate", "idem.in_progress", ...), with the namespace, the
// attempts, whether a duplicate came from the cache, the duration in
// seconds and, for a failed effect, the error's type (never its text):
//
//	guard, err := idem.New(store, "gift-cards", idem.WithObserver(otelidem.Observe))
//
// Under a Tracer the span is the record's, and a record that waited for a
// holder shows each call. Without sqsbatch it is whatever span the caller
// started. Observe never starts a span nor sets a status: the span is the
// caller's. To keep another observer (metrics), call both from one.
func Observe(ctx context.Context, e idem.Event) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	attrs := []trace.EventOption{trace.WithAttributes(
		namespaceKey.String(e.Namespace),
		attemptsKey.Int(e.Attempts),
		cachedKey.Bool(e.Cached),
		durationKey.Float64(e.Duration.Seconds()),
	)}
	if e.Outcome == idem.Failed {
		attrs = append(attrs, trace.WithAttributes(semconv.ErrorTypeKey.String(idem.ErrorClass(e.Err))))
	}
	span.AddEvent("idem."+e.Outcome.String(), attrs...)
}

var _ idem.Observer = Observe
