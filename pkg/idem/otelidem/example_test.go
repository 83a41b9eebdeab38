package otelidem_test

import (
	"context"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
	"github.com/exactlyonce/sqsidem/pkg/idem/otelidem"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// One order followed from the producer's send to the effect's own call, in
// one trace. In a Lambda function the provider exports over OTLP and
// lambda.Start runs h.Handle; here the spans are kept in memory.
func Example() {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	app := tp.Tracer("giftcards")

	// Producer: the message carries the send span's context.
	ctx, send := app.Start(context.Background(), "send order", trace.WithSpanKind(trace.SpanKindProducer))
	msg := events.SQSMessage{
		MessageId:         "m1",
		Body:              `{"orderId": "o-42"}`,
		EventSourceARN:    "arn:aws:sqs:eu-west-1:123456789012:orders",
		MessageAttributes: map[string]events.SQSMessageAttribute{},
	}
	for name, value := range otelidem.MessageAttributes(ctx) {
		msg.MessageAttributes[name] = events.SQSMessageAttribute{DataType: "String", StringValue: &value}
	}
	send.End()

	// Consumer.
	guard, err := idem.New(idemtest.NewMemoryStore(), "gift-cards", idem.WithObserver(otelidem.Observe))
	if err != nil {
		panic(err)
	}
	tracer, err := otelidem.NewTracer(otelidem.WithTracerProvider(tp), otelidem.WithStorageKey(guard.StorageKey))
	if err != nil {
		panic(err)
	}
	issue := func(ctx context.Context, key string, msg events.SQSMessage) ([]byte, error) {
		_, span := app.Start(ctx, "issue gift card") // a child of the record's span
		defer span.End()
		return nil, nil
	}
	h, err := sqsbatch.New(guard, sqsbatch.JSONField("orderId"), issue, sqsbatch.WithTracer(tracer))
	if err != nil {
		panic(err)
	}
	if _, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg}}); err != nil {
		panic(err)
	}

	names := map[trace.SpanID]string{}
	for _, s := range exp.GetSpans() {
		names[s.SpanContext.SpanID()] = s.Name
	}
	for _, s := range exp.GetSpans() {
		parent := names[s.Parent.SpanID()]
		if parent == "" {
			parent = "-"
		}
		fmt.Printf("%-17s parent %-17s same trace as the send: %v\n", s.Name, parent, s.SpanContext.TraceID() == send.SpanContext().TraceID())
		for _, e := range s.Events {
			fmt.Printf("  event %s\n", e.Name)
		}
	}
	// Output:
	// send order        parent -                 same trace as the send: true
	// issue gift card   parent sqs record orders same trace as the send: true
	// sqs record orders parent send order        same trace as the send: true
	//   event idem.executed
	// sqs batch orders  parent -                 same trace as the send: false
}
