package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// queue is an SQS queue as GetQueueAttributes describes it.
type queue struct {
	url   string
	attrs map[string]string
}

// openQueue reads the attributes of the queue at u; a URL that names no
// queue is errNotQueue. what names the flag it came from.
func (a *app) openQueue(ctx context.Context, u, what string) (queue, error) {
	// Only the form is checked here: endpoints lay their paths out
	// differently (LocalStack adds /queue/REGION), and SQS says whether
	// the queue exists.
	if p, err := url.Parse(u); err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" || path.Base(p.Path) == "/" || path.Base(p.Path) == "." {
		return queue{}, usagef("%s %q is not a queue URL (https://sqs.REGION.amazonaws.com/ACCOUNT/NAME)", what, u)
	}
	c, err := a.aws(ctx)
	if err != nil {
		return queue{}, err
	}
	out, err := c.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(u),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll},
	})
	if notQueue(err) {
		return queue{}, fmt.Errorf("%w: %s %q: no such queue in this account and region", errNotQueue, what, u)
	}
	if err != nil {
		return queue{}, fmt.Errorf("%s %q: %w", what, u, err)
	}
	return queue{url: u, attrs: out.Attributes}, nil
}

// notQueue recognises SQS saying that a URL names no queue.
func notQueue(err error) bool {
	var (
		missing *sqstypes.QueueDoesNotExist
		address *sqstypes.InvalidAddress
		api     smithy.APIError
	)
	return errors.As(err, &missing) || errors.As(err, &address) ||
		(errors.As(err, &api) && api.ErrorCode() == "AWS.SimpleQueueService.NonExistentQueue")
}

func (q queue) attr(n sqstypes.QueueAttributeName) string { return q.attrs[string(n)] }

func (q queue) count(n sqstypes.QueueAttributeName) int {
	v, _ := strconv.Atoi(q.attr(n))
	return v
}

// name is the queue's name, the last part of its URL: CloudWatch's
// QueueName dimension.
func (q queue) name() string { return q.url[strings.LastIndex(q.url, "/")+1:] }

func (q queue) fifo() bool { return q.attr(sqstypes.QueueAttributeNameFifoQueue) == "true" }

// redrive is the queue's redrive policy: its DLQ and maxReceiveCount.
type redrive struct {
	DeadLetterTargetArn string      `json:"deadLetterTargetArn"`
	MaxReceiveCount     json.Number `json:"maxReceiveCount"`
}

func (q queue) redrive() (redrive, bool) {
	var r redrive
	raw := q.attr(sqstypes.QueueAttributeNameRedrivePolicy)
	if raw == "" || json.Unmarshal([]byte(raw), &r) != nil {
		return r, false
	}
	return r, true
}

// maxReceiveCount is the queue's, 0 without a redrive policy.
func (q queue) maxReceiveCount() int {
	r, ok := q.redrive()
	if !ok {
		return 0
	}
	n, _ := r.MaxReceiveCount.Int64()
	return int(n)
}

// checkDeadLetter checks that dlq is source's dead-letter queue, so that a
// redrive moves messages back to where they came from.
func checkDeadLetter(source, dlq queue) error {
	r, ok := source.redrive()
	switch {
	case !ok:
		return fmt.Errorf("%w: queue %s has no redrive policy: it has no dead-letter queue", errNotQueue, source.url)
	case r.DeadLetterTargetArn != dlq.attr(sqstypes.QueueAttributeNameQueueArn):
		return fmt.Errorf("%w: %s is not the dead-letter queue of %s (its redrive policy names %s)", errNotQueue, dlq.url, source.url, r.DeadLetterTargetArn)
	}
	return nil
}

// receivable checks that idemctl may receive from dlq without changing
// what happens to its messages. A receive counts towards a redrive policy
// of the DLQ's own, and on a FIFO queue it locks the message group.
func receivable(dlq queue) error {
	switch {
	case dlq.fifo():
		return fmt.Errorf("%w: %s is a FIFO queue: idemctl reads standard dead-letter queues only", errNotQueue, dlq.url)
	case dlq.attr(sqstypes.QueueAttributeNameRedrivePolicy) != "":
		return fmt.Errorf("%w: %s has a redrive policy of its own: receiving from it would move its messages on", errNotQueue, dlq.url)
	}
	return nil
}
