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
)

type fakeQueue struct {
	mu      sync.Mutex
	lookups []string
	changes []string
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

func TestVisibility(t *testing.T) {
	q := &fakeQueue{}
	v := &visibility{client: q}
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
