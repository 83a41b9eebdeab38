package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// sendBatch sends batch under ctx and tells each entry how it went. Only
// entries that SQS lists as failed without blaming the sender are retried
// here: a failed call was retried by the SDK already, so its entries fail at
// once (and their records are released).
func (p *Producer) sendBatch(ctx context.Context, batch []*entry) {
	pending := batch
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			// Every earlier attempt of these was refused: not sent.
			fail(pending, notSent(fmt.Errorf("%w: %w: no time left for attempt %d: %v", ErrSend, idem.ErrNotSent, attempt, err)))
			return
		}
		failures, err := p.sendOnce(ctx, pending)
		if err != nil {
			fail(pending, callError(ctx, err))
			return
		}
		var retry []*entry
		for _, e := range pending {
			f, failed := failures[e]
			switch {
			case !failed:
				continue // told already
			case f.permanent || attempt == p.attempts || ctx.Err() != nil:
				e.tell(sent{err: notSent(fmt.Errorf("%w after %d attempt(s): %v", ErrSend, attempt, f.err))})
			default:
				retry = append(retry, e)
			}
		}
		if len(retry) == 0 {
			return
		}
		pending = retry
		select {
		case <-time.After(p.backoff << (attempt - 1)):
		case <-ctx.Done():
		}
	}
}

func fail(batch []*entry, err error) {
	for _, e := range batch {
		e.tell(sent{err: err})
	}
}

// notSent marks err as a definite failure: SQS refused the message, or it
// never left, so its record is released FAILED. A call that failed any
// other way (a server fault, the network, the deadline) may have sent it:
// its record is released UNKNOWN (idem.Definite). A message that never
// left once the effect's time has run out says so with idem.ErrNotSent:
// the Guard trusts no other definite error after the deadline.
func notSent(err error) error { return idem.Definite(idem.Classify(err, "not-sent")) }

// callError describes a failed SendMessageBatch call.
func callError(ctx context.Context, err error) error {
	var ae smithy.APIError
	switch {
	case errors.As(err, &ae) && ae.ErrorFault() == smithy.FaultClient:
		// BatchRequestTooLong, InvalidParameterValue...: the same request
		// would fail again.
		return notSent(fmt.Errorf("%w: SQS rejected the request (sender fault, not retried): %w", ErrSend, err))
	case ctx.Err() != nil:
		return fmt.Errorf("%w: the call did not finish before the batch's deadline, SQS may have taken the messages: %w", ErrSend, err)
	default:
		return fmt.Errorf("%w: the call failed after the SDK's retries: %w", ErrSend, err)
	}
}

type sendFailure struct {
	err       error
	permanent bool // SenderFault: the same request would fail again
}

// sendOnce makes one SendMessageBatch call and tells the entries that were
// sent. It returns the failed entries, or the call's error when the call
// failed as a whole (no entry told).
func (p *Producer) sendOnce(ctx context.Context, batch []*entry) (map[*entry]sendFailure, error) {
	in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(p.queueURL)}
	byID := make(map[string]*entry, len(batch))
	for i, e := range batch {
		id := strconv.Itoa(i)
		byID[id] = e
		req := types.SendMessageBatchRequestEntry{
			Id:          aws.String(id),
			MessageBody: aws.String(e.body),
			MessageAttributes: map[string]types.MessageAttributeValue{
				keyAttribute: {DataType: aws.String(attributeType), StringValue: aws.String(e.key)},
			},
		}
		for name, value := range e.trace {
			req.MessageAttributes[name] = types.MessageAttributeValue{DataType: aws.String(attributeType), StringValue: aws.String(value)}
		}
		if p.fifo {
			// One group per key: keys are independent. SQS's own
			// five-minute deduplication then catches a quick re-send too.
			req.MessageGroupId = aws.String(e.key)
			req.MessageDeduplicationId = aws.String(e.key)
		}
		in.Entries = append(in.Entries, req)
	}
	out, err := p.sqs.SendMessageBatch(ctx, in)
	if err != nil {
		return nil, err
	}
	for _, s := range out.Successful {
		if e, ok := byID[aws.ToString(s.Id)]; ok {
			e.tell(sent{messageID: aws.ToString(s.MessageId)})
			delete(byID, aws.ToString(s.Id))
		}
	}
	failures := make(map[*entry]sendFailure)
	for _, f := range out.Failed {
		if e, ok := byID[aws.ToString(f.Id)]; ok {
			failures[e] = sendFailure{
				err:       fmt.Errorf("%s: %s", aws.ToString(f.Code), aws.ToString(f.Message)),
				permanent: f.SenderFault,
			}
			delete(byID, aws.ToString(f.Id))
		}
	}
	for _, e := range byID {
		failures[e] = sendFailure{err: errors.New("no result for the entry in the SQS response")}
	}
	return failures, nil
}
