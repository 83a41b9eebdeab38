package tracing

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
	"github.com/exactlyonce/sqsidem/pkg/idem/otelidem"
)

func env(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

// span is what the console exporter writes of a span, as far as these
// tests read it.
type span struct {
	Name        string
	SpanKind    int
	SpanContext struct{ TraceID, SpanID string }
	Parent      struct{ TraceID, SpanID string }
	Attributes  []attr
	Events      []struct{ Name string }
	Resource    []attr
}

type attr struct {
	Key   string
	Value struct{ Value any }
}

func (s span) attr(key string) any { return find(s.Attributes, key) }

func find(attrs []attr, key string) any {
	for _, a := range attrs {
		if a.Key == key {
			return a.Value.Value
		}
	}
	return nil
}

// spans reads the exporter's output: one JSON object per line.
func spans(t *testing.T, out *bytes.Buffer) []span {
	t.Helper()
	var all []span
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var s span
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("not one JSON span per line: %v\n%s", err, sc.Bytes())
		}
		all = append(all, s)
	}
	return all
}

func TestOff(t *testing.T) {
	for _, value := range []string{"", "none", " NONE "} {
		tp, shutdown, err := setup(context.Background(), env(map[string]string{EnvExporter: value}), io.Discard)
		if err != nil || tp == nil || Enabled(tp) {
			t.Fatalf("%s=%q: provider %T, enabled %v, error %v; want a no-op provider", EnvExporter, value, tp, Enabled(tp), err)
		}
		if err := shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		opts, err := consumerOptions(tp)
		if err != nil || opts != nil {
			t.Fatalf("consumer options with tracing off: %d, %v; want none", len(opts), err)
		}
	}
}

func TestUnknownExporter(t *testing.T) {
	_, _, err := setup(context.Background(), env(map[string]string{EnvExporter: "otlp"}), io.Discard)
	var ce *consumer.ConfigError
	if !errors.As(err, &ce) || !errors.Is(err, consumer.ErrConfig) {
		t.Fatalf("error %v (%T), want a *consumer.ConfigError", err, err)
	}
	for _, want := range []string{EnvExporter, `"otlp"`, "none, console"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %s", err, want)
		}
	}
}

func TestConsoleWritesEachSpanAsItEnds(t *testing.T) {
	var out bytes.Buffer
	tp, shutdown, err := setup(context.Background(),
		env(map[string]string{EnvExporter: "Console", "AWS_LAMBDA_FUNCTION_NAME": "orders-consumer"}), &out)
	if err != nil || !Enabled(tp) {
		t.Fatalf("enabled %v, error %v", Enabled(tp), err)
	}
	t.Cleanup(func() { _ = shutdown(context.Background()) })
	if _, ok := tp.(*sdktrace.TracerProvider); !ok {
		t.Fatalf("provider %T, want the SDK's", tp)
	}
	_, s := tp.Tracer("test").Start(context.Background(), "work")
	s.End()
	// No flush: the span is out as soon as it ended (a simple processor).
	got := spans(t, &out)
	if len(got) != 1 || got[0].Name != "work" {
		t.Fatalf("spans %+v, want the one ended", got)
	}
	if name := find(got[0].Resource, "service.name"); name != "orders-consumer" {
		t.Fatalf("service.name %v, want the function's name", name)
	}
}

// The options trace the runtime: a record's span is the child of the
// producer's send span its message carries, with the Guard's outcome; a
// redelivery of it lands in the same trace as a duplicate.
func TestConsumerOptions(t *testing.T) {
	t.Cleanup(func(prev trace.TracerProvider) func() {
		return func() { otel.SetTracerProvider(prev) }
	}(otel.GetTracerProvider()))
	var out bytes.Buffer
	tp, shutdown, err := setup(context.Background(), env(map[string]string{EnvExporter: "console"}), &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = shutdown(context.Background()) })
	opts, err := consumerOptions(tp)
	if err != nil || len(opts) != 2 {
		t.Fatalf("%d options, %v; want the tracer's and the observer's", len(opts), err)
	}
	if otel.GetTracerProvider() != tp {
		t.Fatal("the provider is not the global one: the effect's own spans would be lost")
	}

	ctx, send := tp.Tracer("producer").Start(context.Background(), "sqs send orders", trace.WithSpanKind(trace.SpanKindProducer))
	msg := events.SQSMessage{
		MessageId:         "m-1",
		Body:              `{"orderId":"o-1"}`,
		EventSourceARN:    "arn:aws:sqs:eu-west-1:123456789012:orders",
		Attributes:        map[string]string{"ApproximateReceiveCount": "1"},
		MessageAttributes: map[string]events.SQSMessageAttribute{},
	}
	for name, value := range otelidem.MessageAttributes(ctx) {
		msg.MessageAttributes[name] = events.SQSMessageAttribute{DataType: "String", StringValue: &value}
	}
	send.End()

	cfg, err := consumer.Load(env(map[string]string{consumer.EnvTable: "receipts", consumer.EnvKey: "orderId"}))
	if err != nil {
		t.Fatal(err)
	}
	opts = append(opts, consumer.WithMetrics(io.Discard), consumer.WithLogger(slog.New(slog.DiscardHandler)))
	h, err := consumer.New(cfg, idemtest.NewMemoryStore(), consumer.Effect{
		Lease: func(context.Context, string, events.SQSMessage) ([]byte, error) { return nil, nil },
	}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for receive := range 2 {
		msg.Attributes["ApproximateReceiveCount"] = string(rune('1' + receive))
		if _, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg}}); err != nil {
			t.Fatal(err)
		}
	}

	var records []span
	for _, s := range spans(t, &out) {
		if s.Name == "sqs record orders" {
			records = append(records, s)
		}
	}
	want := []string{"executed", "duplicate"}
	if len(records) != len(want) {
		t.Fatalf("%d record spans, want %d:\n%s", len(records), len(want), out.String())
	}
	sc := send.SpanContext()
	for i, r := range records {
		if r.Parent.TraceID != sc.TraceID().String() || r.Parent.SpanID != sc.SpanID().String() {
			t.Errorf("record span %d: parent %+v, want the send span %s/%s", i, r.Parent, sc.TraceID(), sc.SpanID())
		}
		if got := r.attr("idem.outcome"); got != want[i] {
			t.Errorf("record span %d: idem.outcome %v, want %s", i, got, want[i])
		}
		if len(r.Events) != 1 || r.Events[0].Name != "idem."+want[i] {
			t.Errorf("record span %d: events %+v, want the Guard's idem.%s", i, r.Events, want[i])
		}
	}
}
