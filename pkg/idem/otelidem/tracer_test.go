package otelidem_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
	"github.com/exactlyonce/sqsidem/pkg/idem/otelidem"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

const queueARN = "arn:aws:sqs:eu-west-1:123456789012:orders"

// Producer contexts as they arrive: a W3C traceparent, an X-Ray header from
// a traced sender, and one from a Lambda function without active tracing
// (X-Ray's passthrough mode: Sampled=0).
var (
	w3cTrace, _  = trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	w3cSpan, _   = trace.SpanIDFromHex("00f067aa0ba902b7")
	traceparent  = "00-" + w3cTrace.String() + "-" + w3cSpan.String() + "-01"
	xrayTrace, _ = trace.TraceIDFromHex("5759e988bd862e3fe1be46a994272793")
	xraySpan, _  = trace.SpanIDFromHex("53995c3f42cd8ad8")
	xraySampled  = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	xrayUnsamp   = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0;Lineage=a87bd80c:1"
)

func newProvider(t *testing.T) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, exp
}

// record is an order message keyed by the body's "order" field.
func record(id, order string, attrs map[string]string, system map[string]string) events.SQSMessage {
	m := events.SQSMessage{
		MessageId:      id,
		Body:           `{"order":"` + order + `"}`,
		EventSourceARN: queueARN,
		Attributes:     map[string]string{"ApproximateReceiveCount": "2"},
	}
	for k, v := range system {
		m.Attributes[k] = v
	}
	for name, value := range attrs {
		if m.MessageAttributes == nil {
			m.MessageAttributes = map[string]events.SQSMessageAttribute{}
		}
		m.MessageAttributes[name] = events.SQSMessageAttribute{DataType: "String", StringValue: &value}
	}
	return m
}

type declined struct{}

func (declined) Error() string { return "card declined for order-fail" }

// TestBatchSpans runs one batch with a record of each kind through a real
// Handler and checks the span tree.
func TestBatchSpans(t *testing.T) {
	tp, exp := newProvider(t)
	store := idemtest.NewMemoryStore()
	g, err := idem.New(store, "orders", idem.WithObserver(otelidem.Observe))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := g.Do(ctx, "order-dup", []byte(`{"order":"order-dup"}`), func(context.Context) ([]byte, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, ok, err := store.Acquire(ctx, idem.Acquisition{Key: g.StorageKey("order-busy"), Lease: "other",
		LeaseUntil: now.Add(time.Hour), ExpiresAt: now.Add(24 * time.Hour), Now: now}); err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}

	tracer, err := otelidem.NewTracer(otelidem.WithTracerProvider(tp), otelidem.WithStorageKey(g.StorageKey))
	if err != nil {
		t.Fatal(err)
	}
	effect := func(ctx context.Context, key string, _ events.SQSMessage) ([]byte, error) {
		_, span := tp.Tracer("effect").Start(ctx, "issue gift card")
		defer span.End()
		if key == "order-fail" {
			return nil, declined{}
		}
		return nil, nil
	}
	h, err := sqsbatch.New(g, sqsbatch.JSONField("order"), effect, sqsbatch.WithTracer(tracer), sqsbatch.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{
		record("m-w3c", "order-exec", map[string]string{"traceparent": traceparent}, nil),
		record("m-xray", "order-dup", nil, map[string]string{"AWSTraceHeader": xraySampled}),
		record("m-fail", "order-fail", nil, nil),
		record("m-busy", "order-busy", nil, nil),
		record("m-none", "order-none", nil, nil),
		record("m-passthrough", "order-pass", nil, map[string]string{"AWSTraceHeader": xrayUnsamp}),
	}})
	if err != nil || len(resp.BatchItemFailures) != 2 {
		t.Fatalf("Handle: %v, failures %v", err, resp.BatchItemFailures)
	}

	spans := exp.GetSpans()
	batch := only(t, spans, func(s tracetest.SpanStub) bool { return s.Name == "sqs batch orders" })
	if batch.SpanKind != trace.SpanKindConsumer || batch.Parent.IsValid() || batch.Status.Code != codes.Unset {
		t.Errorf("batch span: kind %v, parent %v, status %v", batch.SpanKind, batch.Parent, batch.Status)
	}
	wantAttrs(t, "batch", batch.Attributes, map[attribute.Key]attribute.Value{
		"messaging.system":              attribute.StringValue("aws_sqs"),
		"messaging.destination.name":    attribute.StringValue("orders"),
		"messaging.operation.type":      attribute.StringValue("process"),
		"messaging.batch.message_count": attribute.IntValue(6),
		"idem.batch.failures":           attribute.IntValue(2),
	})
	if got := linkedSpans(batch.Links); len(got) != 3 || got[0] != w3cSpan || got[1] != xraySpan || got[2] != xraySpan {
		t.Errorf("batch links to %v, want the three producers' spans", got)
	}

	producer := trace.NewSpanContext(trace.SpanContextConfig{TraceID: w3cTrace, SpanID: w3cSpan, TraceFlags: trace.FlagsSampled, Remote: true})
	xrayProducer := trace.NewSpanContext(trace.SpanContextConfig{TraceID: xrayTrace, SpanID: xraySpan, TraceFlags: trace.FlagsSampled, Remote: true})
	tests := []struct {
		id, key, outcome string
		failed           bool
		parent           trace.SpanContext // nil: the batch span
		link             trace.SpanID      // zero: none but the batch
		errorType        string
		event            string
	}{
		{id: "m-w3c", key: "order-exec", outcome: "executed", parent: producer, event: "idem.executed"},
		{id: "m-xray", key: "order-dup", outcome: "duplicate", parent: xrayProducer, event: "idem.duplicate"},
		{id: "m-fail", key: "order-fail", outcome: "failed", failed: true, errorType: "otelidem_test.declined", event: "idem.failed"},
		{id: "m-busy", key: "order-busy", outcome: "in_progress", failed: true, errorType: "in_progress", event: "idem.in_progress"},
		{id: "m-none", key: "order-none", outcome: "executed", event: "idem.executed"},
		{id: "m-passthrough", key: "order-pass", outcome: "executed", link: xraySpan, event: "idem.executed"},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			span := only(t, spans, func(s tracetest.SpanStub) bool { return hasAttr(s.Attributes, "messaging.message.id", tt.id) })
			if span.Name != "sqs record orders" || span.SpanKind != trace.SpanKindConsumer {
				t.Errorf("name %q, kind %v", span.Name, span.SpanKind)
			}
			want := map[attribute.Key]attribute.Value{
				"messaging.system":           attribute.StringValue("aws_sqs"),
				"messaging.destination.name": attribute.StringValue("orders"),
				"idem.receive_count":         attribute.IntValue(2),
				"idem.outcome":               attribute.StringValue(tt.outcome),
				"idem.failed":                attribute.BoolValue(tt.failed),
				"idem.storage_key":           attribute.StringValue(g.StorageKey(tt.key)),
			}
			if tt.errorType != "" {
				want["error.type"] = attribute.StringValue(tt.errorType)
			}
			wantAttrs(t, tt.id, span.Attributes, want)

			parent := tt.parent
			if !parent.IsValid() {
				parent = batch.SpanContext
			}
			if span.SpanContext.TraceID() != parent.TraceID() || span.Parent.SpanID() != parent.SpanID() {
				t.Errorf("span in trace %s under %s, want under %s/%s", span.SpanContext.TraceID(), span.Parent.SpanID(), parent.TraceID(), parent.SpanID())
			}
			links := linkedSpans(span.Links)
			switch {
			case tt.parent.IsValid() && (len(links) != 1 || links[0] != batch.SpanContext.SpanID()):
				t.Errorf("links %v, want the batch span", links)
			case tt.link.IsValid() && (len(links) != 1 || links[0] != tt.link):
				t.Errorf("links %v, want the producer's span %s", links, tt.link)
			case !tt.parent.IsValid() && !tt.link.IsValid() && len(links) != 0:
				t.Errorf("links %v, want none", links)
			}

			if (span.Status.Code == codes.Error) != tt.failed || (tt.failed && span.Status.Description != tt.errorType) {
				t.Errorf("status %+v", span.Status)
			}
			if len(span.Events) != 1 || span.Events[0].Name != tt.event {
				t.Errorf("events %v, want %s", span.Events, tt.event)
			}
			effects := children(spans, span.SpanContext.SpanID())
			if ran := tt.outcome == "executed" || tt.outcome == "failed"; ran != (len(effects) == 1 && effects[0].Name == "issue gift card") {
				t.Errorf("effect spans under the record: %v", effects)
			}
		})
	}

	// Nothing a span says may carry an order id: not the body, not the key,
	// not the effect's error text.
	for _, s := range spans {
		attrs := append(append([]attribute.KeyValue{}, s.Attributes...), attribute.String("status", s.Status.Description))
		for _, e := range s.Events {
			attrs = append(attrs, e.Attributes...)
		}
		for _, a := range attrs {
			if strings.Contains(a.Value.String(), "order-") {
				t.Errorf("span %q: %s = %q carries an order id", s.Name, a.Key, a.Value.String())
			}
		}
	}
}

// TestBatchSpanError: a batch whose every record failed on the store is an
// error span.
func TestBatchSpanError(t *testing.T) {
	tp, exp := newProvider(t)
	g, err := idem.New(downStore{idemtest.NewMemoryStore()}, "orders")
	if err != nil {
		t.Fatal(err)
	}
	tracer, err := otelidem.NewTracer(otelidem.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	h, err := sqsbatch.New(g, sqsbatch.MessageID, func(context.Context, string, events.SQSMessage) ([]byte, error) { return nil, nil },
		sqsbatch.WithTracer(tracer), sqsbatch.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{record("m1", "o", nil, nil)}}); err == nil {
		t.Fatal("Handle: no error with the store down")
	}
	batch := only(t, exp.GetSpans(), func(s tracetest.SpanStub) bool { return s.Name == "sqs batch orders" })
	if batch.Status.Code != codes.Error || !hasAttr(batch.Attributes, "error.type", "store_down") {
		t.Errorf("batch status %+v, attributes %v", batch.Status, batch.Attributes)
	}
	rec := only(t, exp.GetSpans(), func(s tracetest.SpanStub) bool { return s.Name == "sqs record orders" })
	if !hasAttr(rec.Attributes, "error.type", "store_error") {
		t.Errorf("record attributes %v", rec.Attributes)
	}
}

func TestOptions(t *testing.T) {
	for name, opt := range map[string]otelidem.Option{
		"provider":    otelidem.WithTracerProvider(nil),
		"propagator":  otelidem.WithPropagator(nil),
		"batch name":  otelidem.WithBatchSpanName(nil),
		"record name": otelidem.WithRecordSpanName(nil),
		"storage key": otelidem.WithStorageKey(nil),
		"error text":  otelidem.WithErrorText(nil),
	} {
		if _, err := otelidem.NewTracer(opt); !errors.Is(err, idem.ErrInvalid) {
			t.Errorf("nil %s: %v, want ErrInvalid", name, err)
		}
	}

	tp, exp := newProvider(t)
	tracer, err := otelidem.NewTracer(otelidem.WithTracerProvider(tp),
		otelidem.WithBatchSpanName(func(events.SQSEvent) string { return "gift cards" }),
		otelidem.WithRecordSpanName(func(events.SQSMessage) string { return "gift card" }),
		otelidem.WithErrorText(error.Error))
	if err != nil {
		t.Fatal(err)
	}
	ctx, endBatch := tracer.Batch(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1"}}})
	_, endRecord := tracer.Record(ctx, events.SQSMessage{MessageId: "m1"})
	endRecord(sqsbatch.RecordResult{MessageID: "m1", Outcome: idem.Failed, Err: errors.New("no stock"), Failed: true})
	endBatch(events.SQSEventResponse{}, nil)
	var names []string
	for _, s := range exp.GetSpans() {
		names = append(names, s.Name+": "+s.Status.Description)
	}
	if strings.Join(names, ", ") != "gift card: no stock, gift cards: " {
		t.Errorf("spans %v", names)
	}
}
