package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Reading the dead-letter queue without consuming it.
//
// A receive with VisibilityTimeout 0 leaves a message visible, so the next
// receive may return it again: a loop of them samples the queue and never
// knows it has seen everything. Instead each receive hides its messages
// for a short while (hold), so successive receives walk the queue, and an
// empty long poll means every visible message was seen; then the messages
// are shown again at once (ChangeMessageVisibility 0). Nothing consumes
// the DLQ, so hiding its messages for seconds disturbs nobody; if idemctl
// dies meanwhile they come back by themselves when the hold ends. Each
// receive raises a message's ApproximateReceiveCount, which matters only
// on a queue with a redrive policy (refused, see receivable) — and to
// whoever reads the count: the DLQ's reads are in it with the consumer's
// receives, so the reader counts its own (message.reads). The source
// queue is never received from: there a receive counts towards
// maxReceiveCount and would push messages into the DLQ.

const (
	// peekHold hides peeked messages while the DLQ is walked.
	peekHold = 30 * time.Second
	// releaseTimeout bounds showing messages again after the run's context
	// ended (Ctrl-C): they come back after their hold anyway.
	releaseTimeout = 10 * time.Second
	// longPoll is how long an empty receive waits: long polling asks every
	// SQS server, so an empty answer means nothing visible is left.
	longPoll = 1
)

// message is a dead-lettered message.
type message struct {
	id, handle, body string
	sentAt           time.Time
	// receives is SQS's ApproximateReceiveCount as this read returned it,
	// 0 when it gave none; reads are this run's receives of the message,
	// the one that returned it included, which are among receives.
	receives, reads int
	attrs           map[string]sqstypes.MessageAttributeValue
	system          map[string]string
}

func fromSQS(m sqstypes.Message) message {
	msg := message{
		id: aws.ToString(m.MessageId), handle: aws.ToString(m.ReceiptHandle), body: aws.ToString(m.Body),
		attrs: m.MessageAttributes, system: m.Attributes,
	}
	if ms, err := strconv.ParseInt(m.Attributes[string(sqstypes.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
		msg.sentAt = time.UnixMilli(ms)
	}
	msg.receives, _ = strconv.Atoi(m.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)])
	return msg
}

// event is the message as the consumer's Lambda sees it, for its key
// function (consumer.KeyField).
func (m message) event() events.SQSMessage {
	ev := events.SQSMessage{MessageId: m.id, Body: m.body, Attributes: m.system, MessageAttributes: map[string]events.SQSMessageAttribute{}}
	for k, v := range m.attrs {
		ev.MessageAttributes[k] = events.SQSMessageAttribute{StringValue: v.StringValue, BinaryValue: v.BinaryValue, DataType: aws.ToString(v.DataType)}
	}
	return ev
}

// reader walks the DLQ, hiding what it returned for hold.
type reader struct {
	sqs  SQS
	url  string
	hold time.Duration
	// reads counts the receives of each message id in this run.
	reads map[string]int
	// again are messages returned a second time (their hold ran out
	// during a long run): not handled twice, but shown again at the end.
	again []message
}

func newReader(c SQS, url string, hold time.Duration) *reader {
	return &reader{sqs: c, url: url, hold: hold, reads: map[string]int{}}
}

// next returns up to limit (at most 10) messages not seen before; none
// means the walk is over.
func (r *reader) next(ctx context.Context, limit int) ([]message, error) {
	for {
		out, err := r.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(r.url),
			MaxNumberOfMessages:         int32(min(limit, 10)),
			VisibilityTimeout:           int32(r.hold / time.Second),
			WaitTimeSeconds:             longPoll,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			return nil, fmt.Errorf("receive from %s: %w", r.url, err)
		}
		if len(out.Messages) == 0 {
			return nil, nil
		}
		var fresh []message
		for _, m := range out.Messages {
			msg := fromSQS(m)
			r.reads[msg.id]++
			msg.reads = r.reads[msg.id]
			if msg.reads > 1 {
				r.again = append(r.again, msg)
				continue
			}
			fresh = append(fresh, msg)
		}
		if len(fresh) > 0 {
			return fresh, nil
		}
	}
}

// peek reads up to max messages of the DLQ and shows them again.
// complete reports that the walk saw every visible message.
func (a *app) peek(ctx context.Context, dlq queue, max int) (msgs []message, complete bool, err error) {
	if err := receivable(dlq); err != nil {
		return nil, false, err
	}
	r := newReader(a.clients.sqs, dlq.url, peekHold)
	defer func() { err = errors.Join(err, r.release(ctx, append(msgs, r.again...))) }()
	for len(msgs) < max {
		batch, err := r.next(ctx, max-len(msgs))
		if err != nil {
			return msgs, false, err
		}
		if len(batch) == 0 {
			return msgs, true, nil
		}
		msgs = append(msgs, batch...)
	}
	return msgs, false, nil
}

// release makes msgs visible again, now. It runs after ctx may have ended
// (Ctrl-C), with a short context of its own.
func (r *reader) release(ctx context.Context, msgs []message) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	var failed int
	for i := 0; i < len(msgs); i += 10 {
		var entries []sqstypes.ChangeMessageVisibilityBatchRequestEntry
		for j, m := range msgs[i:min(i+10, len(msgs))] {
			entries = append(entries, sqstypes.ChangeMessageVisibilityBatchRequestEntry{
				Id: aws.String(strconv.Itoa(j)), ReceiptHandle: aws.String(m.handle), VisibilityTimeout: 0,
			})
		}
		out, err := r.sqs.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(r.url), Entries: entries})
		switch {
		case err != nil:
			failed += len(entries)
		default:
			failed += len(out.Failed)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d messages of %s stay hidden until their hold of %s ends: showing them again failed", failed, r.url, r.hold)
	}
	return nil
}

// sendBack sends m to the source queue as it was sent: body, message
// attributes, and the X-Ray trace header (the only system attribute SQS
// takes on a send).
func (a *app) sendBack(ctx context.Context, source queue, m message) error {
	in := &sqs.SendMessageInput{QueueUrl: aws.String(source.url), MessageBody: aws.String(m.body)}
	if len(m.attrs) > 0 {
		in.MessageAttributes = make(map[string]sqstypes.MessageAttributeValue, len(m.attrs))
		for k, v := range m.attrs {
			// List values are reserved by SQS and refused on a send.
			in.MessageAttributes[k] = sqstypes.MessageAttributeValue{DataType: v.DataType, StringValue: v.StringValue, BinaryValue: v.BinaryValue}
		}
	}
	if trace := m.system[string(sqstypes.MessageSystemAttributeNameAWSTraceHeader)]; trace != "" {
		in.MessageSystemAttributes = map[string]sqstypes.MessageSystemAttributeValue{
			string(sqstypes.MessageSystemAttributeNameForSendsAWSTraceHeader): {DataType: aws.String("String"), StringValue: aws.String(trace)},
		}
	}
	if _, err := a.clients.sqs.SendMessage(ctx, in); err != nil {
		return fmt.Errorf("send to %s: %w", source.url, err)
	}
	return nil
}

// remove deletes m from the DLQ.
func (a *app) remove(ctx context.Context, dlq queue, m message) error {
	_, err := a.clients.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(dlq.url), ReceiptHandle: aws.String(m.handle)})
	if err != nil {
		return fmt.Errorf("delete from %s: %w", dlq.url, err)
	}
	return nil
}
