package main

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

// entriesSQS keeps every entry sent; the entries of key "refused" fail,
// the sender's fault.
type entriesSQS struct {
	mu      sync.Mutex
	entries []types.SendMessageBatchRequestEntry
}

func (f *entriesSQS) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		key := aws.ToString(e.MessageAttributes[keyAttribute].StringValue)
		if key == "refused" {
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InvalidParameterValue"), SenderFault: true})
			continue
		}
		f.entries = append(f.entries, e)
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id, MessageId: aws.String("msg-" + key)})
	}
	return out, nil
}

func (f *entriesSQS) sent() []types.SendMessageBatchRequestEntry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]types.SendMessageBatchRequestEntry(nil), f.entries...)
}

func attrOf(s sdktrace.ReadOnlySpan, key attribute.Key) string {
	for _, a := range s.Attributes() {
		if a.Key == key {
			return a.Value.String()
		}
	}
	return ""
}

// Each message sent has its own send span, and carries the span's context
// as W3C traceparent for the consumer to continue the trace.
func TestSendSpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	client := &entriesSQS{}
	p := newProducer(t, idemtest.NewMemoryStore(), client, nil)
	p.traceWith(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)))

	out := run(t, p, messages("a", "b", "refused"))
	if out.Sent != 2 || out.Failed != 1 {
		t.Fatalf("output %+v, want 2 sent and 1 failed", out)
	}
	spans := map[string]sdktrace.ReadOnlySpan{} // by message id, "" for the failed one
	for _, s := range exp.GetSpans().Snapshots() {
		if s.Name() != "sqs send orders" || s.SpanKind() != trace.SpanKindProducer {
			t.Fatalf("span %q kind %s, want sqs send orders, producer", s.Name(), s.SpanKind())
		}
		for key, want := range map[attribute.Key]string{
			"messaging.system":           "aws_sqs",
			"messaging.destination.name": "orders",
			"messaging.operation.type":   "send",
		} {
			if got := attrOf(s, key); got != want {
				t.Errorf("span %s: %s = %q, want %q", s.SpanContext().SpanID(), key, got, want)
			}
		}
		spans[attrOf(s, "messaging.message.id")] = s
	}
	if len(spans) != 3 {
		t.Fatalf("%d send spans, want one per message: %v", len(spans), spans)
	}
	if s := spans[""]; s.Status().Code != codes.Error || attrOf(s, "error.type") != "send_failed" {
		t.Errorf("refused message's span: status %+v, error.type %q; want an error, send_failed", s.Status(), attrOf(s, "error.type"))
	}
	for _, e := range client.sent() {
		carrier := propagation.MapCarrier{}
		for name, v := range e.MessageAttributes {
			if name != keyAttribute && aws.ToString(v.DataType) != "String" {
				t.Errorf("attribute %s of type %s, want String", name, aws.ToString(v.DataType))
			}
			carrier[name] = aws.ToString(v.StringValue)
		}
		key := carrier[keyAttribute]
		got := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier))
		want := spans["msg-"+key].SpanContext()
		if !got.IsValid() || got.TraceID() != want.TraceID() || got.SpanID() != want.SpanID() || !got.IsSampled() {
			t.Errorf("message %s carries %v (traceparent %q), want its send span %v", key, got, carrier["traceparent"], want)
		}
	}

	// A re-run sends nothing: no span.
	exp.Reset()
	if out := run(t, p, messages("a", "b")); out.Duplicates != 2 || len(exp.GetSpans()) != 0 {
		t.Fatalf("re-run: %+v, %d spans; want 2 duplicates, no span", out, len(exp.GetSpans()))
	}
}

// Tracing off (the default, or a no-op provider): the messages carry the
// key alone.
func TestNoTracingNoAttributes(t *testing.T) {
	for name, tp := range map[string]trace.TracerProvider{"default": nil, "noop": noop.NewTracerProvider()} {
		client := &entriesSQS{}
		p := newProducer(t, idemtest.NewMemoryStore(), client, nil)
		if tp != nil {
			p.traceWith(tp)
		}
		run(t, p, messages("a"))
		if e := client.sent(); len(e) != 1 || len(e[0].MessageAttributes) != 1 {
			t.Fatalf("%s: entries %+v, want one with the key attribute alone", name, e)
		}
	}
}

// The trace context counts toward the batch's payload limit like any
// attribute.
func TestCarriedSize(t *testing.T) {
	e := newEntry("k", "{}")
	before := e.size
	e.carry(map[string]string{"traceparent": "00-" + strings.Repeat("1", 32) + "-" + strings.Repeat("2", 16) + "-01"})
	if got := e.size - before; got != 72 {
		t.Fatalf("traceparent adds %d bytes, want 72 (name 11, type 6, value 55)", got)
	}
}

func TestQueueName(t *testing.T) {
	for url, want := range map[string]string{
		"https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo": "orders.fifo",
		"http://localhost:9324/000000000000/q":                         "q",
		"orders":                                                       "orders",
	} {
		if got := queueName(url); got != want {
			t.Errorf("queueName(%q) = %q, want %q", url, got, want)
		}
	}
}
