package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"go.opentelemetry.io/otel/trace"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// keyAttribute is the message attribute carrying the key, the idempotency
// key of both the producer and the consumer: consumer.KeyField reads it.
const keyAttribute = contract.KeyField

// attributeType is the data type of the key attribute.
const attributeType = "String"

// keyOf is the key of a message as the consumer will read it.
var keyOf = consumer.KeyField(contract.KeyField)

// maxBatch is the most entries SendMessageBatch takes.
const maxBatch = 10

// maxBatchBytes is the most payload SendMessageBatch takes: the sum over its
// messages of body and attributes (names, data types, values).
const maxBatchBytes = 256 << 10

// ErrSend: SQS did not accept the message after every attempt. Its record
// was released, so a later run sends it.
var ErrSend = errors.New("producer: send failed")

// ErrSendUnknown: the time for the send ran out while its SendMessageBatch
// call was in flight, so SQS may or may not have the message. Its record
// was released, so a later run may send it again; the consumer dedups by
// key. Each call ends by the earliest deadline of its messages, which keeps
// this rare.
var ErrSendUnknown = errors.New("producer: send outcome unknown")

// ErrTooLarge: the message alone is over maxBatchBytes. It wraps
// ErrBadMessage too; it is reported, not sent.
var ErrTooLarge = errors.New("producer: message too large")

// ErrBadMessage: a message of the input is unusable (not JSON, no key); it
// is reported, not sent.
var ErrBadMessage = errors.New("producer: bad message")

// SQS is the part of the SQS client the producer uses.
type SQS interface {
	SendMessageBatch(ctx context.Context, params *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

var _ SQS = (*sqs.Client)(nil)

// Input is the invocation payload (direct invoke or a schedule's input).
type Input struct {
	// Messages are JSON objects, each keyed by its contract.KeyField.
	Messages []json.RawMessage `json:"messages"`
}

// Output is what an invocation did. Every message is counted once.
type Output struct {
	Sent       int       `json:"sent"`
	Duplicates int       `json:"duplicates"` // sent by an earlier run
	InProgress int       `json:"inProgress"` // being sent by another run right now
	Failed     int       `json:"failed"`
	Failures   []Failure `json:"failures"`
}

// Failure says why a message was not sent (or not recorded as sent).
type Failure struct {
	Key    string `json:"key"`
	Reason string `json:"reason"`
}

// Producer publishes messages to the queue, each at most once per key while
// its receipt is kept.
//
// Each message runs through Guard.Do, and the send inside Do hands it to a
// batcher that sends up to 10 per SendMessageBatch call: the library's
// protocol per message stays intact (acquire, send, complete or release)
// and n messages cost about n/10 SQS requests. A partial batch goes once
// every worker waits for its send or has left, or after the linger.
//
// A message is sent only while its record is held: a message that runs out
// of time before its batch goes is taken out of the batch, and a batch's
// calls and retries end by the earliest deadline of its messages. Handle
// returns only after every send has finished.
type Producer struct {
	guard       *idem.Guard
	sqs         SQS
	queueURL    string
	fifo        bool
	concurrency int
	attempts    int
	backoff     time.Duration // before the first retry, doubled after
	linger      time.Duration // how long a partial batch waits for more entries
	log         *slog.Logger
	tracer      trace.Tracer // nil: no tracing (traceWith)
}

// NewProducer builds the producer: its receipts go to store, its messages
// to client.
func NewProducer(cfg contract.ProducerConfig, store idem.Store, client SQS, log *slog.Logger) (*Producer, error) {
	g, err := idem.New(store, cfg.Namespace, cfg.Options()...)
	if err != nil {
		return nil, fmt.Errorf("producer: guard: %w", err)
	}
	return &Producer{
		guard:       g,
		sqs:         client,
		queueURL:    cfg.QueueURL,
		fifo:        strings.HasSuffix(cfg.QueueURL, ".fifo"),
		concurrency: cfg.Concurrency,
		attempts:    cfg.SendAttempts,
		backoff:     100 * time.Millisecond,
		linger:      5 * time.Millisecond,
		log:         log,
	}, nil
}

// Handle sends the messages of in. Problems with single messages are in
// the output, not the error: the error is for an input that cannot be read.
func (p *Producer) Handle(ctx context.Context, in Input) (Output, error) {
	log := p.log
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		log = log.With(slog.String("request_id", lc.AwsRequestID))
	}
	b := newBatcher(ctx, p.sendBatch, p.linger)
	results := make([]result, len(in.Messages))
	work := make(chan int)
	var wg sync.WaitGroup
	workers := min(p.concurrency, len(in.Messages))
	b.join(workers) // before any starts: the first submit must not find itself alone
	for range workers {
		wg.Go(func() {
			defer b.leave()
			for i := range work {
				results[i] = p.message(ctx, b, in.Messages[i])
			}
		})
	}
	for i := range in.Messages {
		work <- i
	}
	close(work)
	wg.Wait()
	b.wait() // no send outlives the invocation

	out := Output{Failures: []Failure{}}
	for _, r := range results {
		switch {
		case r.err == nil && r.outcome == idem.Executed:
			out.Sent++
		case r.err == nil && r.outcome == idem.Rerun:
			// Sent again over an earlier send whose outcome was unknown:
			// the queue may hold the message twice (the consumer dedups
			// it by key).
			out.Sent++
			log.WarnContext(ctx, "message sent again after an unknown outcome", slog.String("storage_key", p.guard.StorageKey(r.key)),
				slog.Bool("rerun", true))
		case r.err == nil && r.outcome == idem.Duplicate:
			out.Duplicates++
		case r.outcome == idem.InProgress:
			out.InProgress++
		default:
			reason := "outcome " + r.outcome.String()
			if r.err != nil {
				reason = r.err.Error()
			}
			out.Failed++
			out.Failures = append(out.Failures, Failure{Key: r.key, Reason: reason})
			log.WarnContext(ctx, "message not sent", slog.String("storage_key", p.guard.StorageKey(r.key)),
				slog.String("outcome", r.outcome.String()), slog.String("error", reason))
		}
	}
	log.InfoContext(ctx, "messages done", slog.Int("messages", len(in.Messages)), slog.Int("sent", out.Sent),
		slog.Int("duplicates", out.Duplicates), slog.Int("in_progress", out.InProgress), slog.Int("failed", out.Failed))
	return out, nil
}

type result struct {
	key     string
	outcome idem.Outcome
	err     error
}

func (p *Producer) message(ctx context.Context, b *batcher, raw json.RawMessage) result {
	// Compact, so that the fingerprint and the body the consumer
	// fingerprints do not depend on how the input was formatted.
	var body bytes.Buffer
	if err := json.Compact(&body, raw); err != nil {
		return result{outcome: idem.Rejected, err: fmt.Errorf("%w: %v", ErrBadMessage, err)}
	}
	key, err := keyOf(events.SQSMessage{Body: body.String()})
	if err != nil {
		return result{outcome: idem.Rejected, err: fmt.Errorf("%w: %w", ErrBadMessage, err)}
	}
	e := newEntry(key, body.String())
	if e.size > maxBatchBytes {
		return result{key: key, outcome: idem.Rejected, err: tooLarge(e.size)}
	}
	res, err := p.guard.Do(ctx, key, body.Bytes(), func(ctx context.Context) ([]byte, error) {
		ctx, end := p.startSend(ctx, e)
		id, err := b.submit(ctx, e)
		end(id, err)
		return id, err
	})
	if err != nil && res.Value != nil {
		// The value is the SQS message id: the send happened, the receipt
		// did not. The lease keeps re-sends out until it expires.
		err = fmt.Errorf("sent as message %s, but the receipt was not written: %w", res.Value, err)
	}
	return result{key: key, outcome: res.Outcome, err: err}
}
