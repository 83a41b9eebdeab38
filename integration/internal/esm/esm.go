// Package esm is a local stand-in for Lambda's SQS event source mapping: it
// long-polls a queue, hands batches to a function as events.SQSEvent, and
// deletes what the function processed, with the same rules Lambda applies to
// partial batch responses. Everything it does not delete comes back after the
// queue's visibility timeout, which is where duplicates come from.
package esm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// SQSAPI is the part of the SQS client the poller uses.
type SQSAPI interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
}

var _ SQSAPI = (*sqs.Client)(nil)

// Invoker runs one synchronous invocation (lambdarun.Pool satisfies it).
type Invoker interface {
	Invoke(ctx context.Context, payload []byte) ([]byte, error)
}

// BatchResult describes one processed batch, for Poller.OnBatch.
type BatchResult struct {
	MessageIDs []string
	// Messages are the batch's messages as received, attributes included
	// (SentTimestamp, ApproximateReceiveCount, message attributes).
	Messages []types.Message
	Deleted  int
	Failed   []string // itemIdentifiers the function reported
	// Err is the invoke error, or why the response made the whole batch fail.
	Err error
}

// Stats is a snapshot of the poller's counters.
type Stats struct {
	Batches          int64 // invocations made
	Received         int64 // messages received
	Deleted          int64
	FailedReturned   int64 // itemIdentifiers reported in batchItemFailures
	InvalidResponses int64 // batches failed wholesale because of the response
	InvokeErrors     int64 // function error, timeout, crash
	ReceiveErrors    int64
	DeleteErrors     int64 // entries SQS refused to delete, or failed calls' entries
}

// Poller is one event source mapping. Configure the exported fields, then Run.
type Poller struct {
	Client   SQSAPI
	QueueURL string
	QueueARN string
	Region   string // default: taken from QueueARN
	// BatchSize is the maximum records per invocation (default 10). Above 10
	// it needs MaxBatchingWindow, as in Lambda, since one receive returns at
	// most 10.
	BatchSize int
	// MaxConcurrency is the number of concurrent poll+invoke loops (default 1).
	MaxConcurrency int
	// WaitTime is the long-poll wait per receive (default 20s, as Lambda).
	WaitTime time.Duration
	// MaxBatchingWindow keeps gathering records, after the first arrive,
	// until BatchSize or this much time has passed.
	MaxBatchingWindow       time.Duration
	Invoker                 Invoker
	ReportBatchItemFailures bool
	// OnBatch, if set, is called after each batch (from the polling goroutine).
	OnBatch func(BatchResult)
	// Logf, if set, receives diagnostics (receive/delete errors).
	Logf func(format string, args ...any)

	batches, received, deleted, failedReturned, invalid, invokeErrs, receiveErrs, deleteErrs atomic.Int64
}

// Stats returns a snapshot of the counters.
func (p *Poller) Stats() Stats {
	return Stats{
		Batches:          p.batches.Load(),
		Received:         p.received.Load(),
		Deleted:          p.deleted.Load(),
		FailedReturned:   p.failedReturned.Load(),
		InvalidResponses: p.invalid.Load(),
		InvokeErrors:     p.invokeErrs.Load(),
		ReceiveErrors:    p.receiveErrs.Load(),
		DeleteErrors:     p.deleteErrs.Load(),
	}
}

// Run polls until ctx is done. Batches already received when ctx ends are
// still invoked and deleted (bounded by the function timeout), so a test
// stopping the mapping does not manufacture redeliveries. It returns nil on
// cancellation and an error only for an invalid configuration.
func (p *Poller) Run(ctx context.Context) error {
	if p.Client == nil || p.Invoker == nil || p.QueueURL == "" {
		return errors.New("esm: Client, Invoker and QueueURL are required")
	}
	if p.BatchSize <= 0 {
		p.BatchSize = 10
	}
	if p.BatchSize > 10 && p.MaxBatchingWindow <= 0 {
		return fmt.Errorf("esm: BatchSize %d > 10 needs MaxBatchingWindow", p.BatchSize)
	}
	if p.MaxConcurrency <= 0 {
		p.MaxConcurrency = 1
	}
	if p.WaitTime <= 0 {
		p.WaitTime = 20 * time.Second
	}
	if p.Region == "" {
		p.Region = regionFromARN(p.QueueARN)
	}
	var wg sync.WaitGroup
	for range p.MaxConcurrency {
		wg.Go(func() { p.loop(ctx) })
	}
	wg.Wait()
	return nil
}

func (p *Poller) loop(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		msgs, err := p.receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			p.receiveErrs.Add(1)
			p.logf("esm: receive from %s: %v", p.QueueURL, err)
			sleep(ctx, backoff)
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		if len(msgs) > 0 {
			p.process(ctx, msgs)
		}
	}
}

// receive gathers one batch: a long poll, then (with a batching window)
// short polls until the batch is full or the window closes.
func (p *Poller) receive(ctx context.Context) ([]types.Message, error) {
	var (
		msgs      []types.Message
		windowEnd time.Time
		wait      = int32(min(p.WaitTime, 20*time.Second) / time.Second)
	)
	for {
		out, err := p.Client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:            aws.String(p.QueueURL),
			MaxNumberOfMessages: int32(min(10, p.BatchSize-len(msgs))),
			WaitTimeSeconds:     wait,
			// Both spellings: emulators differ in which one they honour.
			//lint:ignore SA1019 older emulators only read the deprecated field
			AttributeNames:              []types.QueueAttributeName{types.QueueAttributeNameAll},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		if err != nil {
			if len(msgs) > 0 {
				// Already invisible to others: invoke what we have.
				p.logf("esm: receive during batching window: %v", err)
				return msgs, nil
			}
			return nil, err
		}
		p.received.Add(int64(len(out.Messages)))
		msgs = append(msgs, out.Messages...)
		if len(msgs) == 0 || p.MaxBatchingWindow <= 0 || len(msgs) >= p.BatchSize {
			return msgs, nil
		}
		if windowEnd.IsZero() {
			windowEnd = time.Now().Add(p.MaxBatchingWindow)
		}
		if time.Now().After(windowEnd) {
			return msgs, nil
		}
		wait = 0
		if len(out.Messages) == 0 {
			sleep(ctx, min(time.Until(windowEnd), 100*time.Millisecond))
		}
		if ctx.Err() != nil {
			return msgs, nil
		}
	}
}

func (p *Poller) process(ctx context.Context, msgs []types.Message) {
	p.batches.Add(1)
	ev := ToEvent(msgs, p.QueueARN, p.Region)
	res := BatchResult{MessageIDs: make([]string, len(msgs)), Messages: msgs}
	for i, m := range msgs {
		res.MessageIDs[i] = aws.ToString(m.MessageId)
	}
	payload, err := json.Marshal(ev)
	if err != nil { // cannot happen for these types; don't lose the batch silently
		p.invokeErrs.Add(1)
		res.Err = fmt.Errorf("esm: marshal event: %w", err)
		p.report(res)
		return
	}
	// Detached from ctx: an invocation the function has started runs to
	// completion in Lambda whatever the poller does.
	out, err := p.Invoker.Invoke(context.WithoutCancel(ctx), payload)
	if err != nil {
		p.invokeErrs.Add(1)
		res.Err = err
		p.report(res)
		return
	}
	toDelete := msgs
	if p.ReportBatchItemFailures {
		failed, ferr := FailedItems(out, res.MessageIDs)
		if ferr != nil {
			p.invalid.Add(1)
			res.Err = ferr
			p.report(res)
			return
		}
		p.failedReturned.Add(int64(len(failed)))
		res.Failed = failed
		if len(failed) > 0 {
			skip := make(map[string]bool, len(failed))
			for _, id := range failed {
				skip[id] = true
			}
			toDelete = nil
			for _, m := range msgs {
				if !skip[aws.ToString(m.MessageId)] {
					toDelete = append(toDelete, m)
				}
			}
		}
	}
	res.Deleted = p.delete(ctx, toDelete)
	p.report(res)
}

// delete removes msgs in batches of 10 and returns how many SQS confirmed.
func (p *Poller) delete(ctx context.Context, msgs []types.Message) int {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	n := 0
	for start := 0; start < len(msgs); start += 10 {
		chunk := msgs[start:min(start+10, len(msgs))]
		entries := make([]types.DeleteMessageBatchRequestEntry, len(chunk))
		for i, m := range chunk {
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
		}
		out, err := p.Client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(p.QueueURL), Entries: entries})
		if err != nil {
			p.deleteErrs.Add(int64(len(chunk)))
			p.logf("esm: delete %d messages: %v", len(chunk), err)
			continue
		}
		for _, f := range out.Failed {
			p.logf("esm: delete entry %s: %s %s", aws.ToString(f.Id), aws.ToString(f.Code), aws.ToString(f.Message))
		}
		p.deleteErrs.Add(int64(len(out.Failed)))
		p.deleted.Add(int64(len(out.Successful)))
		n += len(out.Successful)
	}
	return n
}

func (p *Poller) report(r BatchResult) {
	if p.OnBatch != nil {
		p.OnBatch(r)
	}
}

func (p *Poller) logf(format string, args ...any) {
	if p.Logf != nil {
		p.Logf(format, args...)
	}
}

// ErrInvalidResponse marks a partial batch response Lambda would reject,
// which fails the whole batch.
var ErrInvalidResponse = errors.New("esm: invalid partial batch response")

// FailedItems applies Lambda's rules for a ReportBatchItemFailures response:
// an empty, null or {} response, or an empty/null batchItemFailures list,
// means full success; invalid JSON, an empty itemIdentifier or one that is not
// in the batch fails the whole batch (ErrInvalidResponse).
func FailedItems(out []byte, batchIDs []string) ([]string, error) {
	trimmed := bytes.TrimSpace(out)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return nil, nil
	}
	var resp events.SQSEventResponse
	if err := json.Unmarshal(trimmed, &resp); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidResponse, err)
	}
	inBatch := make(map[string]bool, len(batchIDs))
	for _, id := range batchIDs {
		inBatch[id] = true
	}
	var failed []string
	for _, f := range resp.BatchItemFailures {
		if f.ItemIdentifier == "" || !inBatch[f.ItemIdentifier] {
			return nil, fmt.Errorf("%w: itemIdentifier %q is not in the batch", ErrInvalidResponse, f.ItemIdentifier)
		}
		failed = append(failed, f.ItemIdentifier)
	}
	return failed, nil
}

// ToEvent converts received messages into the event Lambda delivers.
func ToEvent(msgs []types.Message, queueARN, region string) events.SQSEvent {
	ev := events.SQSEvent{Records: make([]events.SQSMessage, 0, len(msgs))}
	for _, m := range msgs {
		attrs := make(map[string]string, len(m.Attributes))
		for k, v := range m.Attributes {
			attrs[k] = v
		}
		mattrs := make(map[string]events.SQSMessageAttribute, len(m.MessageAttributes))
		for k, v := range m.MessageAttributes {
			mattrs[k] = events.SQSMessageAttribute{
				StringValue: v.StringValue,
				BinaryValue: v.BinaryValue,
				// Lambda sends empty lists, not null.
				StringListValues: append([]string{}, v.StringListValues...),
				BinaryListValues: append([][]byte{}, v.BinaryListValues...),
				DataType:         aws.ToString(v.DataType),
			}
		}
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId:              aws.ToString(m.MessageId),
			ReceiptHandle:          aws.ToString(m.ReceiptHandle),
			Body:                   aws.ToString(m.Body),
			Md5OfBody:              aws.ToString(m.MD5OfBody),
			Md5OfMessageAttributes: aws.ToString(m.MD5OfMessageAttributes),
			Attributes:             attrs,
			MessageAttributes:      mattrs,
			EventSourceARN:         queueARN,
			EventSource:            "aws:sqs",
			AWSRegion:              region,
		})
	}
	return ev
}

func regionFromARN(arn string) string {
	// arn:partition:sqs:region:account:name
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) == 6 {
		return parts[3]
	}
	return ""
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
