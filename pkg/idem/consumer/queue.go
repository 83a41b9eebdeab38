package consumer

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// queueAPI is the part of the SQS client the runtime uses.
type queueAPI interface {
	GetQueueUrl(ctx context.Context, params *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	ChangeMessageVisibility(ctx context.Context, params *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	SendMessage(ctx context.Context, params *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	DeleteMessage(ctx context.Context, params *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
}

var _ queueAPI = (*sqs.Client)(nil)

// queue keeps copies that meet InProgress out of the dead-letter queue: it
// brings such a copy back when the holder's lease ends
// (sqsbatch.WithVisibility), instead of after the queue's whole visibility
// timeout, which would count a receive against maxReceiveCount for every
// copy that waits on a slow holder; and on its last receive, when it cannot
// wait for the holder, sends it to its queue again, delayed
// (sqsbatch.WithRequeue); and deletes a message done on its last receive at
// once, so that the invocation dying afterwards does not send it to the
// dead-letter queue (sqsbatch.WithDelete).
type queue struct {
	client queueAPI

	mu   sync.Mutex
	urls map[string]string // queue ARN → URL
}

var (
	_ sqsbatch.Visibility = (*queue)(nil)
	_ sqsbatch.Requeue    = (*queue)(nil)
	_ sqsbatch.Deleter    = (*queue)(nil)
)

func (q *queue) ChangeVisibility(ctx context.Context, msg events.SQSMessage, timeout time.Duration) error {
	url, err := q.queueURL(ctx, msg.EventSourceARN)
	if err != nil {
		return err
	}
	_, err = q.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl:          aws.String(url),
		ReceiptHandle:     aws.String(msg.ReceiptHandle),
		VisibilityTimeout: int32(timeout / time.Second),
	})
	return err
}

// Requeue sends msg's body and message attributes (and its X-Ray trace
// header) to its queue as a new message, delayed.
func (q *queue) Requeue(ctx context.Context, msg events.SQSMessage, delay time.Duration) error {
	url, err := q.queueURL(ctx, msg.EventSourceARN)
	if err != nil {
		return err
	}
	in := &sqs.SendMessageInput{
		QueueUrl:          aws.String(url),
		MessageBody:       aws.String(msg.Body),
		DelaySeconds:      int32(delay / time.Second),
		MessageAttributes: map[string]types.MessageAttributeValue{},
	}
	for name, a := range msg.MessageAttributes {
		in.MessageAttributes[name] = types.MessageAttributeValue{DataType: aws.String(a.DataType), StringValue: a.StringValue, BinaryValue: a.BinaryValue}
	}
	if h := msg.Attributes["AWSTraceHeader"]; h != "" {
		in.MessageSystemAttributes = map[string]types.MessageSystemAttributeValue{
			"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String(h)},
		}
	}
	_, err = q.client.SendMessage(ctx, in)
	return err
}

// Delete deletes msg by its receipt handle.
func (q *queue) Delete(ctx context.Context, msg events.SQSMessage) error {
	url, err := q.queueURL(ctx, msg.EventSourceARN)
	if err != nil {
		return err
	}
	_, err = q.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(msg.ReceiptHandle)})
	return err
}

// queueURL asks SQS for the URL of the queue arn names once, so that it
// is right for any endpoint (an emulator's too).
func (q *queue) queueURL(ctx context.Context, arn string) (string, error) {
	q.mu.Lock()
	url, ok := q.urls[arn]
	q.mu.Unlock()
	if ok {
		return url, nil
	}
	// arn:<partition>:sqs:<region>:<account>:<name>
	parts := strings.Split(arn, ":")
	if len(parts) != 6 || parts[2] != "sqs" {
		return "", fmt.Errorf("consumer: event source %q is not an SQS queue ARN", arn)
	}
	out, err := q.client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(parts[5]), QueueOwnerAWSAccountId: aws.String(parts[4])})
	if err != nil {
		return "", fmt.Errorf("consumer: queue URL of %s: %w", parts[5], err)
	}
	url = aws.ToString(out.QueueUrl)
	q.mu.Lock()
	if q.urls == nil {
		q.urls = map[string]string{}
	}
	q.urls[arn] = url
	q.mu.Unlock()
	return url, nil
}
