package otelidem_test

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/exactlyonce/sqsidem/pkg/idem/otelidem"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// TestRoundTrip: what a producer sends with MessageAttributes is what the
// consumer's record span continues.
func TestRoundTrip(t *testing.T) {
	tp, exp := newProvider(t)
	state, err := trace.ParseTraceState("vendor=opaque")
	if err != nil {
		t.Fatal(err)
	}
	upstream := trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: w3cTrace, SpanID: w3cSpan, TraceFlags: trace.FlagsSampled, TraceState: state, Remote: true,
	}))
	ctx, send := tp.Tracer("producer").Start(upstream, "send order", trace.WithSpanKind(trace.SpanKindProducer))
	attrs := otelidem.MessageAttributes(ctx)
	send.End()
	if len(attrs) != 2 || attrs["tracestate"] != "vendor=opaque" {
		t.Fatalf("message attributes %v, want traceparent and tracestate", attrs)
	}

	tracer, err := otelidem.NewTracer(otelidem.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	msg := record("m1", "o", attrs, nil)
	bctx, endBatch := tracer.Batch(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg}})
	rctx, endRecord := tracer.Record(bctx, msg)
	got := trace.SpanContextFromContext(rctx)
	endRecord(sqsbatch.RecordResult{MessageID: "m1"})
	endBatch(events.SQSEventResponse{}, nil)

	sent := send.SpanContext()
	rec := only(t, exp.GetSpans(), func(s tracetest.SpanStub) bool { return s.Name == "sqs record orders" })
	if got.TraceID() != sent.TraceID() || rec.Parent.SpanID() != sent.SpanID() || got.TraceState().String() != "vendor=opaque" {
		t.Errorf("record span %s/%s under %s, state %q; sent %s/%s", got.TraceID(), got.SpanID(), rec.Parent.SpanID(), got.TraceState(), sent.TraceID(), sent.SpanID())
	}
}

func TestMessageAttributesWithoutSpan(t *testing.T) {
	if attrs := otelidem.MessageAttributes(context.Background()); len(attrs) != 0 {
		t.Errorf("message attributes %v without a span", attrs)
	}
}

// TestProducerContext: which context a record span continues, whatever a
// message carries.
func TestProducerContext(t *testing.T) {
	binary := events.SQSMessage{MessageId: "m1", EventSourceARN: queueARN, MessageAttributes: map[string]events.SQSMessageAttribute{
		"traceparent": {DataType: "Binary", BinaryValue: []byte(traceparent)},
	}}
	custom := record("m1", "o", nil, nil)
	custom.MessageAttributes = map[string]events.SQSMessageAttribute{"traceparent": {DataType: "String.W3C", StringValue: &traceparent}}
	tests := []struct {
		name   string
		msg    events.SQSMessage
		parent trace.TraceID // zero: the batch's trace
	}{
		{"traceparent", record("m1", "o", map[string]string{"traceparent": traceparent}, nil), w3cTrace},
		{"custom String type", custom, w3cTrace},
		{"AWSTraceHeader", record("m1", "o", nil, map[string]string{"AWSTraceHeader": xraySampled}), xrayTrace},
		{"both: traceparent wins", record("m1", "o", map[string]string{"traceparent": traceparent}, map[string]string{"AWSTraceHeader": xraySampled}), w3cTrace},
		{"unsampled producer: the batch", record("m1", "o", nil, map[string]string{"AWSTraceHeader": xrayUnsamp}), trace.TraceID{}},
		{"malformed traceparent: the batch", record("m1", "o", map[string]string{"traceparent": "00-zz"}, nil), trace.TraceID{}},
		{"binary attribute ignored", binary, trace.TraceID{}},
		{"none", record("m1", "o", nil, nil), trace.TraceID{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, _ := newProvider(t)
			tracer, err := otelidem.NewTracer(otelidem.WithTracerProvider(tp))
			if err != nil {
				t.Fatal(err)
			}
			bctx, endBatch := tracer.Batch(context.Background(), events.SQSEvent{Records: []events.SQSMessage{tt.msg}})
			defer endBatch(events.SQSEventResponse{}, nil)
			rctx, endRecord := tracer.Record(bctx, tt.msg)
			defer endRecord(sqsbatch.RecordResult{})
			want := tt.parent
			if !want.IsValid() {
				want = trace.SpanContextFromContext(bctx).TraceID()
			}
			if got := trace.SpanContextFromContext(rctx).TraceID(); got != want {
				t.Errorf("record span in trace %s, want %s", got, want)
			}
		})
	}
}
