package kit

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// SQSAPI is what the kit asks of SQS.
type SQSAPI interface {
	SendMessageBatch(context.Context, *sqs.SendMessageBatchInput, ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	DeleteMessage(context.Context, *sqs.DeleteMessageInput, ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
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
// It keeps this run's messages, to send back those of a key an operator
// settled (redrive). It is safe for concurrent use: one receive at a time.
type deadLetters struct {
	c   SQSAPI
	url string
	run string

	mu     sync.Mutex
	seen   map[string]*dlqMessage // this run's, by message id
	labels map[string]int         // this run's labels, by how many messages carry each
	others map[string]bool        // message ids of others
}

// dlqMessage is a message of this run seen in the dead-letter queue.
type dlqMessage struct {
	label  string
	msg    sqstypes.Message // the last receive's: its receipt handle
	at     time.Time        // of that receive
	redone bool             // sent back to the queue and deleted here
}

func newDeadLetters(c SQSAPI, url, run string) *deadLetters {
	return &deadLetters{c: c, url: url, run: run, seen: map[string]*dlqMessage{}, labels: map[string]int{}, others: map[string]bool{}}
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
			if seen, ok := d.seen[id]; ok {
				seen.msg, seen.at = m, time.Now() // a newer receipt handle
				continue
			}
			if d.others[id] {
				continue
			}
			fresh++
			if run, label, ok := runLabel(m.MessageAttributes); ok && run == d.run {
				d.seen[id] = &dlqMessage{label: label, msg: m, at: time.Now()}
				d.labels[label]++
			} else {
				d.others[id] = true
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
	return maps.Clone(d.labels), len(d.others)
}

// redrive sends this run's messages labelled with one of labels back to
// queue and deletes them here, as an operator's redrive does (receive,
// send back, delete), each once: their receive count starts again, and
// the fault the kit asked for is not asked again. It
// returns how many it moved, and how many of them it saw but could not
// move yet: hidden by a receive longer ago than dlqHide allows for a
// delete (the next poll sees them again).
func (d *deadLetters) redrive(ctx context.Context, queue string, labels map[string]bool) (moved, waiting int, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fresh := time.Duration(dlqHide)*time.Second - 5*time.Second
	for _, id := range slices.Sorted(maps.Keys(d.seen)) {
		m := d.seen[id]
		if m.redone || !labels[m.label] {
			continue
		}
		if time.Since(m.at) > fresh {
			waiting++
			continue
		}
		attrs := map[string]sqstypes.MessageAttributeValue{}
		for k, v := range m.msg.MessageAttributes {
			// The fault the kit asked for (a crash on the first receive)
			// is the kit's instrument, not the message's: the redriven
			// copy, received first again, would crash once more.
			if k != consumer.FaultAttribute {
				attrs[k] = sqstypes.MessageAttributeValue{DataType: v.DataType, StringValue: v.StringValue, BinaryValue: v.BinaryValue}
			}
		}
		if _, err := d.c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queue), MessageBody: m.msg.Body, MessageAttributes: attrs}); err != nil {
			return moved, waiting, fmt.Errorf("kit: redrive %s to %s: %w", m.label, queue, err)
		}
		if _, err := d.c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(d.url), ReceiptHandle: m.msg.ReceiptHandle}); err != nil {
			return moved, waiting, fmt.Errorf("kit: redrive %s: deleting it from the dead-letter queue: %w", m.label, err)
		}
		m.redone, moved = true, moved+1
	}
	return moved, waiting, nil
}
