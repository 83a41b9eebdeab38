package system

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// WaitIdle waits until the queue holds no message, visible or in flight,
// for two checks in a row: everything was deleted or moved to the DLQ.
func (s *System) WaitIdle(ctx context.Context, progress func(visible, inFlight int)) error {
	quiet := 0
	for {
		visible, inFlight, err := s.Depth(ctx, s.Queue.URL)
		if err != nil {
			return err
		}
		if progress != nil {
			progress(visible, inFlight)
		}
		if visible+inFlight == 0 {
			quiet++
		} else {
			quiet = 0
		}
		if quiet == 2 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("system: queue not drained (%d visible, %d in flight): %w", visible, inFlight, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Depth is how many messages of the queue at url are visible and in
// flight.
func (s *System) Depth(ctx context.Context, url string) (visible, inFlight int, err error) {
	return QueueDepth(ctx, s.SQS, url)
}

// QueueDepth returns the approximate numbers of visible and in-flight
// messages of the queue at url.
func QueueDepth(ctx context.Context, c *sqs.Client, url string) (visible, inFlight int, err error) {
	out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	if err != nil {
		return 0, 0, fmt.Errorf("system: queue attributes: %w", err)
	}
	visible, _ = strconv.Atoi(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)])
	inFlight, _ = strconv.Atoi(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
	return visible, inFlight, nil
}

// Applied returns how many times each of keys had its effect (the
// probe's answer).
func (s *System) Applied(ctx context.Context, keys []string) (map[string]int, error) {
	applied, err := s.Probe.Applied(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("system: probe: %w", err)
	}
	return applied, nil
}

// DeadLetter is a message in the DLQ with the reason the consumer logged.
type DeadLetter struct {
	MessageID string
	Key       string // "" for a message without one
	Body      string
	Receives  int
	Reason    string
}

// DeadLetters reads the DLQ. The messages stay there, visible again once
// the read is over: an operator's redrive (idemctl) after a check finds
// them at once.
func (s *System) DeadLetters(ctx context.Context) ([]DeadLetter, error) {
	return s.deadLetters(ctx, time.Minute, true)
}

// DeadLettersHidden reads the DLQ, each message once (by id), hiding what
// it read for hide: longer than the read takes, or messages read first
// come back before the last are read. It reads until two receives come
// back empty and the queue counts no visible message: a read that ends
// with messages still visible is an error, not a short answer.
func (s *System) DeadLettersHidden(ctx context.Context, hide time.Duration) ([]DeadLetter, error) {
	return s.deadLetters(ctx, hide, false)
}

// deadLetters is DeadLettersHidden; with release, what it read is made
// visible again once the read is over.
func (s *System) deadLetters(ctx context.Context, hide time.Duration, release bool) ([]DeadLetter, error) {
	var out []DeadLetter
	var handles []string
	seen := map[string]bool{}
	defer func() {
		if release {
			s.unhide(context.WithoutCancel(ctx), handles)
		}
	}()
	for {
		for empty := 0; empty < 2; {
			res, err := s.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
				QueueUrl:                    aws.String(s.DLQ.URL),
				MaxNumberOfMessages:         10,
				VisibilityTimeout:           int32(hide / time.Second),
				WaitTimeSeconds:             1,
				MessageAttributeNames:       []string{"All"},
				MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			})
			if err != nil {
				return nil, fmt.Errorf("system: read DLQ: %w", err)
			}
			if len(res.Messages) == 0 {
				empty++
				continue
			}
			empty = 0
			for _, m := range res.Messages {
				id := aws.ToString(m.MessageId)
				handles = append(handles, aws.ToString(m.ReceiptHandle))
				if seen[id] {
					continue
				}
				seen[id] = true
				d := DeadLetter{MessageID: id, Body: aws.ToString(m.Body)}
				d.Receives, _ = strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
				d.Key = KeyOf(s.Key, m.MessageAttributes, d.Body)
				d.Reason = s.Records.Reason(d.MessageID)
				out = append(out, d)
			}
		}
		visible, _, err := QueueDepth(ctx, s.SQS, s.DLQ.URL)
		if err != nil {
			return nil, err
		}
		if visible == 0 {
			return out, nil
		}
		if err := ctx.Err(); err != nil {
			return out, fmt.Errorf("system: read DLQ: %d messages read, %d still visible: %w", len(out), visible, err)
		}
	}
}

// unhide makes the messages of the DLQ received with handles visible
// again, best effort: what it cannot reach comes back when its
// visibility ends.
func (s *System) unhide(ctx context.Context, handles []string) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for chunk := range slices.Chunk(handles, 10) {
		var entries []types.ChangeMessageVisibilityBatchRequestEntry
		for i, h := range chunk {
			entries = append(entries, types.ChangeMessageVisibilityBatchRequestEntry{
				Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(h), VisibilityTimeout: 0,
			})
		}
		_, _ = s.SQS.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(s.DLQ.URL), Entries: entries})
	}
}

// KeyOf is a message's key as the consumer reads it: the attribute named
// key, else the body's top-level field; "" when it has neither.
func KeyOf(key string, attrs map[string]types.MessageAttributeValue, body string) string {
	if a, ok := attrs[key]; ok {
		return aws.ToString(a.StringValue)
	}
	var fields map[string]any
	if json.Unmarshal([]byte(body), &fields) == nil {
		if v, ok := fields[key].(string); ok {
			return v
		}
	}
	return ""
}

// Report is the invariant check of a run: every message sent is applied
// or sits in the DLQ with a reason (Lost), and each key was applied as
// often as the consumer's guarantee allows (Broken).
type Report struct {
	Keys          int            // distinct keys sent
	Applied       int            // keys whose effect took place
	DoubleEffects int            // effects beyond the first
	Doubled       []string       // keys applied more than once
	Missing       []string       // keys neither applied nor in the DLQ, and DLQ-bound messages not there: lost
	DeadLetters   []DeadLetter   // with reasons
	Outcomes      map[string]int // per-record outcomes the consumers logged
	Deliveries    int            // records the consumers processed
	// DynamoRequests counts the consumers' and producer's DynamoDB requests.
	DynamoRequests map[string]int
	// Promise is what the consumer said of itself at init (System.Promise).
	Promise Ready
	// Times is how many times each key sent was applied (the probe's
	// answer; 0 for a key never applied).
	Times map[string]int
	// Reruns is, per key, how many of its records the consumers logged
	// with outcome rerun: the effect ran again after an unknown outcome
	// (the at-least-once window, counted in the metric Rerun).
	Reruns map[string]int
	// Retaken is, per key, how many of its records were logged by an
	// attempt after the first that may have run the effect and ended
	// without writing its receipt (unconfirmed, lease lost, failed): an
	// effect run again after an unknown outcome whose own outcome is
	// unknown again, which no rerun counts.
	Retaken map[string]int
}

// Check asks the probe and reads the DLQ, and accounts for every message
// sent, and for the messages (by id) that can only end in the DLQ.
func (s *System) Check(ctx context.Context, sent []Message, deadIDs ...string) (Report, error) {
	var keys []string
	seen := map[string]bool{}
	for _, m := range sent {
		if !seen[m.Key] {
			seen[m.Key] = true
			keys = append(keys, m.Key)
		}
	}
	applied, err := s.Applied(ctx, keys)
	if err != nil {
		return Report{}, err
	}
	dead, err := s.DeadLetters(ctx)
	if err != nil {
		return Report{}, err
	}
	inDLQ := map[string]bool{}
	for _, d := range dead {
		inDLQ[d.MessageID] = true
		if d.Key != "" {
			inDLQ[d.Key] = true
		}
	}
	r := Report{
		Keys: len(keys), DeadLetters: dead, Outcomes: s.Records.Outcomes(), DynamoRequests: s.Requests.Counts(),
		Promise: s.Promise, Times: map[string]int{}, Reruns: map[string]int{}, Retaken: map[string]int{},
	}
	for _, k := range keys {
		r.Times[k] = applied[k]
		reruns, retaken := s.Reruns(k)
		if reruns > 0 {
			r.Reruns[k] = reruns
		}
		if retaken > 0 {
			r.Retaken[k] = retaken
		}
		switch n := applied[k]; {
		case n >= 1:
			r.Applied++
			if n > 1 {
				r.DoubleEffects += n - 1
				r.Doubled = append(r.Doubled, k)
			}
		case !inDLQ[k]:
			r.Missing = append(r.Missing, k)
		}
	}
	for _, id := range deadIDs {
		if !inDLQ[id] {
			r.Missing = append(r.Missing, "message "+id)
		}
	}
	for _, n := range r.Outcomes {
		r.Deliveries += n
	}
	slices.Sort(r.Doubled)
	slices.Sort(r.Missing)
	return r, nil
}

// Lost returns an error naming the messages that vanished or a dead letter
// without a reason, nil when the invariant holds.
func (r Report) Lost() error {
	if len(r.Missing) > 0 {
		return fmt.Errorf("%d messages vanished (neither applied nor in the DLQ): %v", len(r.Missing), r.Missing)
	}
	for _, d := range r.DeadLetters {
		if d.Reason == "" {
			return fmt.Errorf("dead letter %s (key %q) has no logged reason", d.MessageID, d.Key)
		}
	}
	return nil
}
