package kit

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// SQSAPI is what the kit asks of SQS.
type SQSAPI interface {
	SendMessageBatch(context.Context, *sqs.SendMessageBatchInput, ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
}

var _ SQSAPI = (*sqs.Client)(nil)

// redrive is how long a message that keeps failing takes to reach the
// dead-letter queue: the queue's visibility timeout, maxReceiveCount times.
type redrive struct {
	visibility  time.Duration
	maxReceives int
}

// bound is the time a failing message may take to reach the dead-letter
// queue, its last receive's visibility timeout included.
func (r redrive) bound() time.Duration { return time.Duration(r.maxReceives+1) * r.visibility }

// parseRedrive reads the attributes VisibilityTimeout and RedrivePolicy;
// maxReceiveCount is a number on AWS and may be a string elsewhere.
func parseRedrive(attrs map[string]string) (redrive, error) {
	secs, err := strconv.Atoi(attrs[string(sqstypes.QueueAttributeNameVisibilityTimeout)])
	if err != nil {
		return redrive{}, fmt.Errorf("kit: the queue's VisibilityTimeout %q: %w", attrs[string(sqstypes.QueueAttributeNameVisibilityTimeout)], err)
	}
	var policy struct {
		MaxReceiveCount json.Number `json:"maxReceiveCount"`
	}
	raw := attrs[string(sqstypes.QueueAttributeNameRedrivePolicy)]
	if err := json.Unmarshal([]byte(raw), &policy); err != nil {
		return redrive{}, fmt.Errorf("kit: the queue's RedrivePolicy %q: %w (the construct always sets one)", raw, err)
	}
	n, err := strconv.Atoi(policy.MaxReceiveCount.String())
	if err != nil || n < 1 {
		return redrive{}, fmt.Errorf("kit: the queue's RedrivePolicy %q: maxReceiveCount is not a positive count", raw)
	}
	return redrive{visibility: time.Duration(secs) * time.Second, maxReceives: n}, nil
}

func redriveOf(ctx context.Context, c SQSAPI, url string) (redrive, error) {
	out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{
		sqstypes.QueueAttributeNameVisibilityTimeout, sqstypes.QueueAttributeNameRedrivePolicy,
	}})
	if err != nil {
		return redrive{}, fmt.Errorf("kit: queue %s: %w", url, err)
	}
	return parseRedrive(out.Attributes)
}

// depth is the number of messages the queue holds: visible, in flight and
// delayed (a copy the runtime requeued).
func depth(ctx context.Context, c SQSAPI, url string) (int, error) {
	names := []sqstypes.QueueAttributeName{
		sqstypes.QueueAttributeNameApproximateNumberOfMessages,
		sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
	}
	out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: names})
	if err != nil {
		return 0, fmt.Errorf("kit: queue %s: %w", url, err)
	}
	total := 0
	for _, name := range names {
		n, _ := strconv.Atoi(out.Attributes[string(name)])
		total += n
	}
	return total, nil
}

// deadLetters collects what the dead-letter queue holds, by the label of
// this run's messages; others (earlier runs', strangers) are only counted.
// It is safe for concurrent use: one receive at a time.
type deadLetters struct {
	c   SQSAPI
	url string
	run string

	mu     sync.Mutex
	seen   map[string]bool // message ids
	labels map[string]int  // this run's labels, by how many messages carry each
	others int
}

func newDeadLetters(c SQSAPI, url, run string) *deadLetters {
	return &deadLetters{c: c, url: url, run: run, seen: map[string]bool{}, labels: map[string]int{}}
}

// dlqHide is how long a receive hides what it saw, so that the next
// receive returns other messages. Nothing else reads the dead-letter
// queue; the messages are visible again afterwards, for an operator.
const dlqHide = 30

// poll receives what the dead-letter queue shows until a receive returns
// nothing new.
func (d *deadLetters) poll(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		out, err := d.c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(d.url), MaxNumberOfMessages: 10, VisibilityTimeout: dlqHide, WaitTimeSeconds: 1,
			MessageAttributeNames: []string{"All"},
		})
		if err != nil {
			return fmt.Errorf("kit: the dead-letter queue %s: %w", d.url, err)
		}
		fresh := 0
		for _, m := range out.Messages {
			id := aws.ToString(m.MessageId)
			if d.seen[id] {
				continue
			}
			d.seen[id], fresh = true, fresh+1
			if run, label, ok := runLabel(m.MessageAttributes); ok && run == d.run {
				d.labels[label]++
			} else {
				d.others++
			}
		}
		if fresh == 0 {
			return nil
		}
	}
}

// count is how many messages of this run labelled label were seen.
func (d *deadLetters) count(label string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.labels[label]
}

// snapshot returns this run's labels seen and how many other messages.
func (d *deadLetters) snapshot() (map[string]int, int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	labels := make(map[string]int, len(d.labels))
	for l, n := range d.labels {
		labels[l] = n
	}
	return labels, d.others
}
