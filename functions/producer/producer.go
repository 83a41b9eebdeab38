package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// OrderIDAttribute is the message attribute carrying the order id, the
// idempotency key of both the producer and the consumer.
const OrderIDAttribute = "orderId"

// maxBatch is the most entries SendMessageBatch takes.
const maxBatch = 10

// ErrSend: SQS did not accept the message after every attempt. The order's
// record was released, so a later run sends it.
var ErrSend = errors.New("producer: send failed")

// ErrBadOrder: an order of the input is unusable; it is reported, not sent.
var ErrBadOrder = errors.New("producer: bad order")

// SQS is the part of the SQS client the producer uses.
type SQS interface {
	SendMessageBatch(ctx context.Context, params *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

var _ SQS = (*sqs.Client)(nil)

// Input is the invocation payload (direct invoke or a schedule's input).
type Input struct {
	Orders []json.RawMessage `json:"orders"`
}

// Output is what an invocation did. Every order is counted once.
type Output struct {
	Sent       int       `json:"sent"`
	Duplicates int       `json:"duplicates"` // sent by an earlier run
	InProgress int       `json:"inProgress"` // being sent by another run right now
	Failed     int       `json:"failed"`
	Failures   []Failure `json:"failures"`
}

// Failure says why an order was not sent (or not recorded as sent).
type Failure struct {
	OrderID string `json:"orderId"`
	Reason  string `json:"reason"`
}

// Producer publishes orders to the queue, each at most once per order id
// while its receipt is kept.
//
// Each order runs through Guard.Do, and the send inside Do hands the message
// to a batcher that sends up to 10 per SendMessageBatch call: the library's
// protocol per order stays intact (acquire, send, complete or release) and
// n orders cost about n/10 SQS requests.
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
}

// NewProducer builds the producer. The fault switches of cfg wrap store and
// client.
func NewProducer(cfg Config, store idem.Store, client SQS, log *slog.Logger) (*Producer, error) {
	store, client = cfg.Faults.wrap(store, client)
	g, err := idem.New(store, cfg.Namespace, cfg.GuardOptions()...)
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

// Handle sends the orders of in. Problems with single orders are in the
// output, not the error: the error is for an input that cannot be read.
func (p *Producer) Handle(ctx context.Context, in Input) (Output, error) {
	log := p.log
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		log = log.With(slog.String("request_id", lc.AwsRequestID))
	}
	b := &batcher{ctx: ctx, send: p.sendBatch, linger: p.linger}
	results := make([]result, len(in.Orders))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(p.concurrency, len(in.Orders)) {
		wg.Go(func() {
			for i := range work {
				results[i] = p.order(ctx, b, in.Orders[i])
			}
		})
	}
	for i := range in.Orders {
		work <- i
	}
	close(work)
	wg.Wait()

	out := Output{Failures: []Failure{}}
	for _, r := range results {
		switch {
		case r.err == nil && r.outcome == idem.Executed:
			out.Sent++
		case r.err == nil && r.outcome == idem.Duplicate:
			out.Duplicates++
		case r.outcome == idem.InProgress:
			out.InProgress++
		default:
			out.Failed++
			out.Failures = append(out.Failures, Failure{OrderID: r.orderID, Reason: r.err.Error()})
			log.WarnContext(ctx, "order not sent", slog.String("record_key", p.guard.StorageKey(r.orderID)),
				slog.String("outcome", r.outcome.String()), slog.String("error", r.err.Error()))
		}
	}
	log.InfoContext(ctx, "orders done", slog.Int("orders", len(in.Orders)), slog.Int("sent", out.Sent),
		slog.Int("duplicates", out.Duplicates), slog.Int("in_progress", out.InProgress), slog.Int("failed", out.Failed))
	return out, nil
}

type result struct {
	orderID string
	outcome idem.Outcome
	err     error
}

func (p *Producer) order(ctx context.Context, b *batcher, raw json.RawMessage) result {
	var o struct {
		OrderID string `json:"orderId"`
	}
	if err := json.Unmarshal(raw, &o); err != nil || o.OrderID == "" {
		return result{outcome: idem.Rejected, err: fmt.Errorf("%w: no string orderId in %d bytes of order", ErrBadOrder, len(raw))}
	}
	// Compact, so that the fingerprint and the body the consumer
	// fingerprints do not depend on how the input was formatted.
	var body bytes.Buffer
	if err := json.Compact(&body, raw); err != nil {
		return result{orderID: o.OrderID, outcome: idem.Rejected, err: fmt.Errorf("%w: %v", ErrBadOrder, err)}
	}
	e := &entry{orderID: o.OrderID, body: body.String(), done: make(chan sent, 1)}
	res, err := p.guard.Do(ctx, o.OrderID, body.Bytes(), func(ctx context.Context) ([]byte, error) {
		return b.submit(ctx, e)
	})
	if err != nil && res.Value != nil {
		// The value is the SQS message id: the send happened, the receipt
		// did not. The lease keeps re-sends out until it expires.
		err = fmt.Errorf("sent as message %s, but the receipt was not written: %w", res.Value, err)
	}
	return result{orderID: o.OrderID, outcome: res.Outcome, err: err}
}

// entry is one message waiting for a batch.
type entry struct {
	orderID string
	body    string
	done    chan sent // buffered: the batch never waits for the order
}

type sent struct {
	messageID string
	err       error
}

// batcher groups the entries of concurrent orders into SendMessageBatch
// calls: a batch goes when it has 10 entries, or linger after its first.
type batcher struct {
	ctx    context.Context // the invocation's: a batch serves many orders
	send   func(ctx context.Context, batch []*entry)
	linger time.Duration

	mu      sync.Mutex
	pending []*entry
	timer   *time.Timer
}

// submit queues e and waits for its send. It returns the SQS message id.
func (b *batcher) submit(ctx context.Context, e *entry) ([]byte, error) {
	b.mu.Lock()
	b.pending = append(b.pending, e)
	if len(b.pending) >= maxBatch {
		b.flushLocked()
	} else if b.timer == nil {
		b.timer = time.AfterFunc(b.linger, b.flush)
	}
	b.mu.Unlock()
	select {
	case s := <-e.done:
		if s.err != nil {
			return nil, s.err
		}
		return []byte(s.messageID), nil
	case <-ctx.Done():
		// The batch may still go out; the record is released and a later
		// run may send again, which the consumer dedups by order id.
		return nil, fmt.Errorf("producer: waiting for the send: %w", ctx.Err())
	}
}

func (b *batcher) flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushLocked()
}

func (b *batcher) flushLocked() {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	if len(b.pending) == 0 {
		return
	}
	batch := b.pending
	b.pending = nil
	go b.send(b.ctx, batch)
}

// sendBatch sends batch, retrying the failed entries that SQS does not
// blame on the sender, and tells each entry how it went.
func (p *Producer) sendBatch(ctx context.Context, batch []*entry) {
	pending := batch
	for attempt := 1; ; attempt++ {
		failures := p.sendOnce(ctx, pending)
		var retry []*entry
		for _, e := range pending {
			f, failed := failures[e]
			switch {
			case !failed:
				continue // told already
			case f.permanent || attempt == p.attempts || ctx.Err() != nil:
				e.done <- sent{err: fmt.Errorf("%w after %d attempt(s): %v", ErrSend, attempt, f.err)}
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

type sendFailure struct {
	err       error
	permanent bool // SenderFault: the same request would fail again
}

// sendOnce makes one SendMessageBatch call, tells the entries that were
// sent, and returns the others.
func (p *Producer) sendOnce(ctx context.Context, batch []*entry) map[*entry]sendFailure {
	in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(p.queueURL)}
	byID := make(map[string]*entry, len(batch))
	for i, e := range batch {
		id := strconv.Itoa(i)
		byID[id] = e
		req := types.SendMessageBatchRequestEntry{
			Id:          aws.String(id),
			MessageBody: aws.String(e.body),
			MessageAttributes: map[string]types.MessageAttributeValue{
				OrderIDAttribute: {DataType: aws.String("String"), StringValue: aws.String(e.orderID)},
			},
		}
		if p.fifo {
			// One group per order: orders are independent. SQS's own
			// five-minute deduplication then catches a quick re-send too.
			req.MessageGroupId = aws.String(e.orderID)
			req.MessageDeduplicationId = aws.String(e.orderID)
		}
		in.Entries = append(in.Entries, req)
	}
	failures := make(map[*entry]sendFailure)
	out, err := p.sqs.SendMessageBatch(ctx, in)
	if err != nil {
		for _, e := range batch {
			failures[e] = sendFailure{err: err}
		}
		return failures
	}
	for _, s := range out.Successful {
		if e, ok := byID[aws.ToString(s.Id)]; ok {
			e.done <- sent{messageID: aws.ToString(s.MessageId)}
			delete(byID, aws.ToString(s.Id))
		}
	}
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
	return failures
}
