//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/exactlyonce/sqsidem/integration/internal/esm"
	"github.com/exactlyonce/sqsidem/integration/internal/system"
)

// TestTracing: with OTEL_TRACES_EXPORTER=console on both Lambdas, one
// order is one trace, from the producer's send to the consumer's record,
// and a redelivery of it lands in the same trace as a duplicate. The
// spans are read from what the two compiled Lambdas print on stdout (the
// console exporter's JSON lines, which Lambda sends to CloudWatch Logs).
//
// The test plays the event source mapping itself (with the poller's own
// conversion, esm.ToEvent) so that it can lose the delete: after the
// consumer applied the message, it makes it visible again instead of
// deleting it, and SQS delivers the same message, traceparent included, a
// second time.
func TestTracing(t *testing.T) {
	t.Parallel()
	traced := map[string]string{"OTEL_TRACES_EXPORTER": "console"}
	s, out := startTraced(t, system.Config{Consumers: 1, NoPoller: true, ConsumerEnv: traced, ProducerEnv: traced})
	ctx := ctxFor(t, 2*time.Minute)
	msgs := messages(t, ctx, s, "traced", 1)

	res, err := s.Produce(ctx, msgs)
	if err != nil || res.Sent != 1 {
		t.Fatalf("producer: %+v, %v; want 1 sent", res, err)
	}
	first := receiveOne(t, ctx, s)
	id := aws.ToString(first.MessageId)
	if tp := first.MessageAttributes["traceparent"]; aws.ToString(tp.DataType) != "String" || aws.ToString(tp.StringValue) == "" {
		t.Errorf("the message carries no traceparent attribute of type String: %v", slices.Sorted(maps.Keys(first.MessageAttributes)))
	}
	handOver(t, ctx, s, first)
	// The delete is lost: SQS delivers the message again.
	if _, err := s.SQS.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(s.Queue.URL), ReceiptHandle: first.ReceiptHandle, VisibilityTimeout: 0,
	}); err != nil {
		t.Fatal(err)
	}
	again := receiveOne(t, ctx, s)
	if aws.ToString(again.MessageId) != id || again.Attributes["ApproximateReceiveCount"] != "2" {
		t.Fatalf("redelivery: message %s, receive count %s; want %s, 2",
			aws.ToString(again.MessageId), again.Attributes["ApproximateReceiveCount"], id)
	}
	handOver(t, ctx, s, again)
	if _, err := s.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(s.Queue.URL), ReceiptHandle: again.ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	if r := check(t, s, msgs); r.Applied != 1 || r.DoubleEffects != 0 {
		t.Fatalf("applied %d, double effects %d; want 1, 0", r.Applied, r.DoubleEffects)
	}

	// The producer's send span, and the consumer's two record spans of the
	// message. The Lambdas write a span before they answer, but the
	// harness reads their output on its own: wait for the lines.
	//
	// The send span is the one the delivered message's traceparent names:
	// its messaging.message.id is the id SQS answered the producer with,
	// which is another message's when a loaded LocalStack took a send
	// whose reply it lost and the SDK sent it again.
	queue := s.Queue.URL[strings.LastIndexByte(s.Queue.URL, '/')+1:]
	parent := strings.Split(aws.ToString(first.MessageAttributes["traceparent"].StringValue), "-")
	var send []span
	var records []span
	deadline := time.Now().Add(15 * time.Second)
	for {
		send = out.find(func(sp span) bool {
			return sp.Name == "sqs send "+queue && len(parent) == 4 && sp.SpanContext.SpanID == parent[2]
		})
		records = out.find(func(sp span) bool {
			return sp.Name == "sqs record "+queue && sp.attr("messaging.message.id") == id
		})
		if len(send) >= 1 && len(records) >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(send) != 1 || len(records) != 2 {
		t.Fatalf("message %s: %d send spans, %d record spans; want 1 and 2 (%d spans printed in all)", id, len(send), len(records), out.count())
	}
	sp := send[0]
	if got := sp.attr("messaging.message.id"); got != id {
		// The send was taken twice (see above); the span names the copy
		// SQS answered for. It must name one.
		if s, ok := got.(string); !ok || s == "" {
			t.Errorf("send span: messaging.message.id %v; want the message id SQS answered", got)
		}
		t.Logf("send span names message %v, delivered %s: the send was taken twice", got, id)
	}
	if sp.SpanKind != spanKindProducer || sp.service() != "producer" || sp.attr("messaging.system") != "aws_sqs" {
		t.Errorf("send span: kind %d, service %q, messaging.system %v; want producer (%d), producer, aws_sqs",
			sp.SpanKind, sp.service(), sp.attr("messaging.system"), spanKindProducer)
	}
	want := fmt.Sprintf("00-%s-%s-01", sp.SpanContext.TraceID, sp.SpanContext.SpanID)
	if got := aws.ToString(first.MessageAttributes["traceparent"].StringValue); got != want {
		t.Errorf("the message carries traceparent %q, want the send span's %q", got, want)
	}
	for i, outcome := range []string{"executed", "duplicate"} {
		r := records[i]
		if r.SpanContext.TraceID != sp.SpanContext.TraceID || r.Parent.TraceID != sp.SpanContext.TraceID || r.Parent.SpanID != sp.SpanContext.SpanID {
			t.Errorf("delivery %d: record span in trace %s with parent %s/%s; want the send span %s/%s as its parent",
				i+1, r.SpanContext.TraceID, r.Parent.TraceID, r.Parent.SpanID, sp.SpanContext.TraceID, sp.SpanContext.SpanID)
		}
		if r.SpanKind != spanKindConsumer || r.service() != "consumer" {
			t.Errorf("delivery %d: record span kind %d, service %q; want consumer (%d), consumer", i+1, r.SpanKind, r.service(), spanKindConsumer)
		}
		if got := r.attr("idem.outcome"); got != outcome {
			t.Errorf("delivery %d: idem.outcome %v, want %s", i+1, got, outcome)
		}
		if got := r.attr("idem.receive_count"); got != float64(i+1) {
			t.Errorf("delivery %d: idem.receive_count %v, want %d", i+1, got, i+1)
		}
		if !r.hasEvent("idem." + outcome) {
			t.Errorf("delivery %d: no idem.%s event (the Guard's observer) on the record span: %+v", i+1, outcome, r.Events)
		}
	}
	t.Logf("trace %s: send span %s (producer) → record spans %s (executed), %s (duplicate, receive 2) (consumer)",
		sp.SpanContext.TraceID, sp.SpanContext.SpanID, records[0].SpanContext.SpanID, records[1].SpanContext.SpanID)
}

// receiveOne takes the next message off the queue as the event source
// mapping does: with its system attributes and its message attributes.
func receiveOne(t *testing.T, ctx context.Context, s *system.System) types.Message {
	t.Helper()
	for ctx.Err() == nil {
		out, err := s.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(s.Queue.URL),
			MaxNumberOfMessages:         1,
			WaitTimeSeconds:             1,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 1 {
			return out.Messages[0]
		}
	}
	t.Fatalf("no message received: %v", ctx.Err())
	return types.Message{}
}

// handOver invokes the consumer with m, as Lambda's mapping would, and
// wants it done.
func handOver(t *testing.T, ctx context.Context, s *system.System, m types.Message) {
	t.Helper()
	payload, err := json.Marshal(esm.ToEvent([]types.Message{m}, s.Queue.ARN, s.Stack.Region))
	if err != nil {
		t.Fatal(err)
	}
	failed, err := s.InvokeConsumer(ctx, payload)
	if err != nil || len(failed) != 0 {
		t.Fatalf("consumer: failed %v, %v", failed, err)
	}
}

// startTraced starts a system whose Lambdas' output the test reads (and
// shows the tail of when it fails).
func startTraced(t *testing.T, cfg system.Config) (*system.System, *spanLog) {
	t.Helper()
	cfg.ConsumerBinary, cfg.ProducerBinary, cfg.Template = lambdas(t)
	cfg.DynamoURL, cfg.SQSURL = dynamoEndpoint(t), sqsEndpoint(t)
	out := &spanLog{}
	cfg.Log = out
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := system.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("close system: %v", err)
		}
		if t.Failed() {
			t.Logf("Lambda log, last lines:\n%s", out.tail(40))
		}
	})
	return s, out
}

// The span kinds as the console exporter writes them (trace.SpanKind).
const (
	spanKindProducer = 4
	spanKindConsumer = 5
)

// span is a span as the console exporter (stdouttrace) writes it, as far
// as the test reads it.
type span struct {
	Name        string
	SpanKind    int
	SpanContext struct{ TraceID, SpanID string }
	Parent      struct{ TraceID, SpanID string }
	Attributes  []spanAttr
	Events      []struct{ Name string }
	Resource    []spanAttr
}

type spanAttr struct {
	Key   string
	Value struct{ Value any }
}

func (s span) attr(key string) any { return spanAttrOf(s.Attributes, key) }

// service is the service.name of the Lambda that printed the span.
func (s span) service() any { return spanAttrOf(s.Resource, "service.name") }

func (s span) hasEvent(name string) bool {
	for _, e := range s.Events {
		if e.Name == name {
			return true
		}
	}
	return false
}

func spanAttrOf(attrs []spanAttr, key string) any {
	for _, a := range attrs {
		if a.Key == key {
			return a.Value.Value
		}
	}
	return nil
}

// spanLog takes the harness's log of both Lambdas and keeps the spans
// they printed, in order. Each line arrives whole but its prefix
// (instance, pid) is a write of its own, and the two functions' pools
// write independently: a span is found by its opening, wherever it is in
// the line.
type spanLog struct {
	mu    sync.Mutex
	buf   []byte
	lines []string
	spans []span
}

func (l *spanLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		line := l.buf[:i]
		l.lines = append(l.lines, string(line))
		if j := bytes.Index(line, []byte(`{"Name":`)); j >= 0 {
			var sp span
			if json.Unmarshal(line[j:], &sp) == nil {
				l.spans = append(l.spans, sp)
			}
		}
		l.buf = l.buf[i+1:]
	}
	return len(p), nil
}

func (l *spanLog) find(match func(span) bool) []span {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []span
	for _, sp := range l.spans {
		if match(sp) {
			out = append(out, sp)
		}
	}
	return out
}

func (l *spanLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.spans)
}

func (l *spanLog) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines[max(0, len(l.lines)-n):], "\n")
}
