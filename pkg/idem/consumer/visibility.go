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

	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// queueAPI is the part of the SQS client the runtime uses.
type queueAPI interface {
	GetQueueUrl(ctx context.Context, params *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	ChangeMessageVisibility(ctx context.Context, params *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

var _ queueAPI = (*sqs.Client)(nil)

// visibility brings a copy that met InProgress back when the holder's lease
// ends (sqsbatch.WithVisibility), instead of after the queue's whole
// visibility timeout, which would count a receive against maxReceiveCount
// for every copy that waits on a slow holder.
type visibility struct {
	client queueAPI

	mu   sync.Mutex
	urls map[string]string // queue ARN → URL
}

var _ sqsbatch.Visibility = (*visibility)(nil)

func (v *visibility) ChangeVisibility(ctx context.Context, msg events.SQSMessage, timeout time.Duration) error {
	url, err := v.queueURL(ctx, msg.EventSourceARN)
	if err != nil {
		return err
	}
	_, err = v.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl:          aws.String(url),
		ReceiptHandle:     aws.String(msg.ReceiptHandle),
		VisibilityTimeout: int32(timeout / time.Second),
	})
	return err
}

// queueURL asks SQS for the URL of the queue arn names once, so that it
// is right for any endpoint (an emulator's too).
func (v *visibility) queueURL(ctx context.Context, arn string) (string, error) {
	v.mu.Lock()
	url, ok := v.urls[arn]
	v.mu.Unlock()
	if ok {
		return url, nil
	}
	// arn:<partition>:sqs:<region>:<account>:<name>
	parts := strings.Split(arn, ":")
	if len(parts) != 6 || parts[2] != "sqs" {
		return "", fmt.Errorf("consumer: event source %q is not an SQS queue ARN", arn)
	}
	out, err := v.client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(parts[5]), QueueOwnerAWSAccountId: aws.String(parts[4])})
	if err != nil {
		return "", fmt.Errorf("consumer: queue URL of %s: %w", parts[5], err)
	}
	url = aws.ToString(out.QueueUrl)
	v.mu.Lock()
	if v.urls == nil {
		v.urls = map[string]string{}
	}
	v.urls[arn] = url
	v.mu.Unlock()
	return url, nil
}
