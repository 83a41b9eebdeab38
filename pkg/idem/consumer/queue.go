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
// dead-letter queue (sqsbatch.WithDelete). It also keeps a record that
// failed on the store hidden longer with each receive
// (sqsbatch.WithStoreBackoff, with Config.VisibilityTimeout).
type queue struct {
	client queueAPI

	mu   sync.Mutex
	urls map[string]*urlLookup // by queue ARN
}

// urlLookup is the answer to one GetQueueUrl, once done is closed.
type urlLookup struct {
	done chan struct{}
	url  string
	err  error
}

// urlTimeout bounds a GetQueueUrl, whatever its caller's deadline.
const urlTimeout = 10 * time.Second

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
// is right for any endpoint (an emulator's too). The question outlives ctx:
// a caller short of time — the store backoff's visibility changes, made in
// what is left of an invocation whose store timed out — gets ctx's error,
// and the answer is there for the next call instead of being asked for,
// and cut short, again and again. A lookup that fails is asked again by
// the next call.
func (q *queue) queueURL(ctx context.Context, arn string) (string, error) {
	// arn:<partition>:sqs:<region>:<account>:<name>
	parts := strings.Split(arn, ":")
	if len(parts) != 6 || parts[2] != "sqs" {
		return "", fmt.Errorf("consumer: event source %q is not an SQS queue ARN", arn)
	}
	q.mu.Lock()
	l := q.urls[arn]
	if l == nil {
		l = &urlLookup{done: make(chan struct{})}
		if q.urls == nil {
			q.urls = map[string]*urlLookup{}
		}
		q.urls[arn] = l
		go q.lookUp(arn, parts[5], parts[4], l)
	}
	q.mu.Unlock()
	select {
	case <-l.done:
		return l.url, l.err
	case <-ctx.Done():
		return "", fmt.Errorf("consumer: queue URL of %s: %w", parts[5], ctx.Err())
	}
}

// lookUp asks SQS for the URL of queue name in account, and forgets l
// when it fails, so that the next call asks again.
func (q *queue) lookUp(arn, name, account string, l *urlLookup) {
	defer close(l.done)
	ctx, cancel := context.WithTimeout(context.Background(), urlTimeout)
	defer cancel()
	out, err := q.client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name), QueueOwnerAWSAccountId: aws.String(account)})
	if err != nil {
		l.err = fmt.Errorf("consumer: queue URL of %s: %w", name, err)
		q.mu.Lock()
		if q.urls[arn] == l {
			delete(q.urls, arn)
		}
		q.mu.Unlock()
		return
	}
	l.url = aws.ToString(out.QueueUrl)
}
