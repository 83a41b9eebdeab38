package tracing

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
	"github.com/exactlyonce/sqsidem/pkg/idem/otelidem"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// Consumer sets tracing up (Setup) and returns the runtime options that
// trace a consumer with it, for consumer.Start: a span per batch and per
// record (otelidem.Tracer), each record's span the child of the producer's
// send span it carries, and the Guard's outcomes as events on it
// (otelidem.Observe). The provider also becomes the global one, so the
// effect's own spans (otel.Tracer) are children of the record's. With
// tracing off it returns no option: the runtime runs as it would without.
func Consumer(ctx context.Context) ([]consumer.Option, error) {
	tp, _, err := Setup(ctx)
	if err != nil {
		return nil, err
	}
	return consumerOptions(tp)
}

func consumerOptions(tp trace.TracerProvider) ([]consumer.Option, error) {
	if !Enabled(tp) {
		return nil, nil
	}
	otel.SetTracerProvider(tp)
	tracer, err := otelidem.NewTracer(otelidem.WithTracerProvider(tp))
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	return []consumer.Option{
		consumer.WithBatchOptions(sqsbatch.WithTracer(tracer)),
		consumer.WithGuardOptions(idem.WithObserver(otelidem.Observe)),
	}, nil
}
