package consumer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

type fakeQueue struct {
	mu      sync.Mutex
	lookups []string
	changes []string
	sent    []*sqs.SendMessageInput
	deleted []string
}

func (f *fakeQueue) DeleteMessage(_ context.Context, in *sqs.DeleteMessageInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted = append(f.deleted, aws.ToString(in.QueueUrl)+" "+aws.ToString(in.ReceiptHandle))
	return &sqs.DeleteMessageOutput{}, nil
}

func (f *fakeQueue) GetQueueUrl(_ context.Context, in *sqs.GetQueueUrlInput, _ ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lookups = append(f.lookups, aws.ToString(in.QueueOwnerAWSAccountId)+"/"+aws.ToString(in.QueueName))
	return &sqs.GetQueueUrlOutput{QueueUrl: aws.String("http://sqs.local/" + aws.ToString(in.QueueName))}, nil
}

func (f *fakeQueue) ChangeMessageVisibility(_ context.Context, in *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.changes = append(f.changes, fmt.Sprint(aws.ToString(in.QueueUrl), " ", aws.ToString(in.ReceiptHandle), " ", in.VisibilityTimeout))
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

func (f *fakeQueue) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, in)
	return &sqs.SendMessageOutput{}, nil
}

func TestVisibility(t *testing.T) {
	q := &fakeQueue{}
	v := &queue{client: q}
	msg := events.SQSMessage{EventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:orders", ReceiptHandle: "rh-1"}
	for range 2 {
		if err := v.ChangeVisibility(t.Context(), msg, 7*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if len(q.lookups) != 1 || q.lookups[0] != "123456789012/orders" {
		t.Errorf("lookups %v, want the queue's URL asked for once", q.lookups)
	}
	if len(q.changes) != 2 || q.changes[0] != "http://sqs.local/orders rh-1 7" {
		t.Errorf("changes %v", q.changes)
	}
	if err := v.ChangeVisibility(t.Context(), events.SQSMessage{EventSourceARN: "aws:kinesis"}, time.Second); err == nil {
		t.Error("no error for an event source that is not a queue")
	}
}

func TestRequeue(t *testing.T) {
	f := &fakeQueue{}
	q := &queue{client: f}
	id, n := "order-1", "1"
	msg := events.SQSMessage{
		EventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:orders",
		Body:           `{"orderId":"order-1"}`,
		Attributes:     map[string]string{"AWSTraceHeader": "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1", "ApproximateReceiveCount": "4"},
		MessageAttributes: map[string]events.SQSMessageAttribute{
			"orderId":                  {DataType: "String", StringValue: &id},
			"blob":                     {DataType: "Binary", BinaryValue: []byte{1, 2}},
			sqsbatch.RequeuesAttribute: {DataType: "Number", StringValue: &n},
		},
	}
	if err := q.Requeue(t.Context(), msg, 7*time.Second); err != nil {
		t.Fatal(err)
	}
	if len(f.sent) != 1 {
		t.Fatalf("sent %d messages, want 1", len(f.sent))
	}
	in := f.sent[0]
	if aws.ToString(in.QueueUrl) != "http://sqs.local/orders" || aws.ToString(in.MessageBody) != msg.Body || in.DelaySeconds != 7 {
		t.Errorf("sent to %s body %s delay %d", aws.ToString(in.QueueUrl), aws.ToString(in.MessageBody), in.DelaySeconds)
	}
	if a := in.MessageAttributes["orderId"]; aws.ToString(a.DataType) != "String" || aws.ToString(a.StringValue) != id {
		t.Errorf("orderId attribute %+v", a)
	}
	if a := in.MessageAttributes["blob"]; aws.ToString(a.DataType) != "Binary" || len(a.BinaryValue) != 2 {
		t.Errorf("blob attribute %+v", a)
	}
	if a := in.MessageAttributes[sqsbatch.RequeuesAttribute]; aws.ToString(a.DataType) != "Number" || aws.ToString(a.StringValue) != "1" {
		t.Errorf("%s attribute %+v", sqsbatch.RequeuesAttribute, a)
	}
	if h := in.MessageSystemAttributes["AWSTraceHeader"]; aws.ToString(h.StringValue) != msg.Attributes["AWSTraceHeader"] {
		t.Errorf("AWSTraceHeader %+v, want the trace carried", h)
	}
}

func TestDelete(t *testing.T) {
	f := &fakeQueue{}
	q := &queue{client: f}
	if err := q.Delete(t.Context(), events.SQSMessage{EventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:orders", ReceiptHandle: "rh-9"}); err != nil {
		t.Fatal(err)
	}
	if len(f.deleted) != 1 || f.deleted[0] != "http://sqs.local/orders rh-9" {
		t.Errorf("deleted %v", f.deleted)
	}
}

// slowLookups answers GetQueueUrl once release is closed (or fails when its
// context ends first), with err if set.
type slowLookups struct {
	*fakeQueue
	release chan struct{}
	err     error
	asked   atomic.Int32
}

func (s *slowLookups) GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, opts ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	s.asked.Add(1)
	select {
	case <-s.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	out, _ := s.fakeQueue.GetQueueUrl(ctx, in, opts...)
	return out, s.err
}

// TestQueueURLOutlivesItsCaller: a caller whose context ends before SQS
// answers with the queue's URL fails, and the answer is there for the next
// call: the store backoff's visibility changes run in what is left of an
// invocation, too little for a first lookup on a slow day.
func TestQueueURLOutlivesItsCaller(t *testing.T) {
	f := &slowLookups{fakeQueue: &fakeQueue{}, release: make(chan struct{})}
	q := &queue{client: f}
	msg := events.SQSMessage{EventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:orders", ReceiptHandle: "rh-1"}
	short, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if err := q.ChangeVisibility(short, msg, time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a caller out of time: %v, want context.DeadlineExceeded", err)
	}
	close(f.release)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := q.ChangeVisibility(ctx, msg, time.Minute); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := f.asked.Load(); n != 1 || len(f.changes) != 1 {
		t.Errorf("%d lookups, changes %v; want one of each", n, f.changes)
	}
}

// TestQueueURLFailureIsAskedAgain: a lookup that failed is not kept.
func TestQueueURLFailureIsAskedAgain(t *testing.T) {
	f := &slowLookups{fakeQueue: &fakeQueue{}, release: make(chan struct{}), err: errors.New("AccessDenied")}
	close(f.release)
	q := &queue{client: f}
	msg := events.SQSMessage{EventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:orders", ReceiptHandle: "rh-1"}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := q.Delete(ctx, msg); err == nil {
		t.Fatal("no error from a failed lookup")
	}
	f.err = nil
	if err := q.Delete(ctx, msg); err != nil {
		t.Fatalf("the lookup was not asked again: %v", err)
	}
	if n := f.asked.Load(); n != 2 {
		t.Errorf("%d lookups, want two", n)
	}
}
