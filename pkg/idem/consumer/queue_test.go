package consumer

import (
	"context"
	"fmt"
	"sync"
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
