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
	"github.com/aws/smithy-go"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// OrderIDAttribute is the message attribute carrying the order id, the
// idempotency key of both the producer and the consumer.
const OrderIDAttribute = "orderId"

// attributeType is the data type of the order id attribute.
const attributeType = "String"

// maxBatch is the most entries SendMessageBatch takes.
const maxBatch = 10

// maxBatchBytes is the most payload SendMessageBatch takes: the sum over its
// messages of body and attributes (names, data types, values).
const maxBatchBytes = 256 << 10

// ErrSend: SQS did not accept the message after every attempt. The order's
// record was released, so a later run sends it.
var ErrSend = errors.New("producer: send failed")

// ErrSendUnknown: the time for the send ran out while its SendMessageBatch
// call was in flight, so SQS may or may not have the message. The order's
// record was released, so a later run may send it again; the consumer dedups
// by order id. Each call ends by the earliest deadline of its orders, which
// keeps this rare.
var ErrSendUnknown = errors.New("producer: send outcome unknown")

// ErrTooLarge: the order's message alone is over maxBatchBytes. It wraps
// ErrBadOrder too; it is reported, not sent.
var ErrTooLarge = errors.New("producer: order too large")

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
//
// A message is sent only while its record is held: an order that runs out
// of time before its batch goes is taken out of the batch, and a batch's
// calls and retries end by the earliest deadline of its orders. Handle
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
}

// NewProducer builds the producer: its receipts go to store, its messages
// to client.
func NewProducer(cfg contract.Producer, store idem.Store, client SQS, log *slog.Logger) (*Producer, error) {
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

// Handle sends the orders of in. Problems with single orders are in the
// output, not the error: the error is for an input that cannot be read.
func (p *Producer) Handle(ctx context.Context, in Input) (Output, error) {
	log := p.log
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		log = log.With(slog.String("request_id", lc.AwsRequestID))
	}
	b := newBatcher(ctx, p.sendBatch, p.linger)
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
	b.wait() // no send outlives the invocation

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
	e := newEntry(o.OrderID, body.String())
	if e.size > maxBatchBytes {
		return result{orderID: o.OrderID, outcome: idem.Rejected, err: tooLarge(e.size)}
	}
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
	size    int       // what the message counts toward the batch's payload limit
	done    chan sent // buffered: the batch never waits for the order

	// Set by submit; flushed is guarded by the batcher's mutex.
	ctx     context.Context // the effect's: its record may be released once it ends
	flushed bool            // handed to a SendMessageBatch call
}

func newEntry(orderID, body string) *entry {
	return &entry{orderID: orderID, body: body, size: messageSize(orderID, body), done: make(chan sent, 1)}
}

// messageSize is what a message counts toward the SendMessageBatch payload
// limit: its body and its attributes' names, data types and values.
func messageSize(orderID, body string) int {
	return len(body) + len(OrderIDAttribute) + len(attributeType) + len(orderID)
}

// tooLarge is the error of a message that no SendMessageBatch call can take.
func tooLarge(size int) error {
	return fmt.Errorf("%w: %w: the message is %d bytes (body and attributes), more than the %d bytes SQS takes",
		ErrBadOrder, ErrTooLarge, size, maxBatchBytes)
}

type sent struct {
	messageID string
	err       error
}

func (s sent) result() ([]byte, error) {
	if s.err != nil {
		return nil, s.err
	}
	return []byte(s.messageID), nil
}

// batcher groups the entries of concurrent orders into SendMessageBatch
// calls: a batch goes when it has 10 entries, when the next entry would take
// its payload over maxBatchBytes, or linger after its first entry.
//
// An entry is sent only while its order may still send it: an entry whose
// context (the effect's) ends before its batch goes is taken out and never
// sent, and each call runs under a context that ends with the earliest of
// its entries' deadlines (see batchContext).
type batcher struct {
	ctx    context.Context // the invocation's: the parent of every batch's context
	send   func(ctx context.Context, batch []*entry)
	linger time.Duration

	mu           sync.Mutex
	pending      []*entry
	pendingBytes int
	timer        *time.Timer

	// wg counts the send goroutines and the armed linger timer; wait
	// waits for them, so that none outlives the invocation.
	wg sync.WaitGroup
}

func newBatcher(ctx context.Context, send func(context.Context, []*entry), linger time.Duration) *batcher {
	return &batcher{ctx: ctx, send: send, linger: linger}
}

// submit queues e and waits for its send, or for ctx to end. It returns the
// SQS message id.
func (b *batcher) submit(ctx context.Context, e *entry) ([]byte, error) {
	if e.size > maxBatchBytes {
		return nil, tooLarge(e.size)
	}
	b.mu.Lock()
	if err := ctx.Err(); err != nil {
		b.mu.Unlock()
		return nil, fmt.Errorf("producer: not sent: %w", err)
	}
	e.ctx = ctx
	if len(b.pending) > 0 && b.pendingBytes+e.size > maxBatchBytes {
		b.flushLocked()
	}
	b.pending = append(b.pending, e)
	b.pendingBytes += e.size
	if len(b.pending) >= maxBatch {
		b.flushLocked()
	} else if b.timer == nil {
		b.wg.Add(1) // done by the timer's function, or by stopTimerLocked
		b.timer = time.AfterFunc(b.linger, func() {
			defer b.wg.Done()
			b.flush()
		})
	}
	b.mu.Unlock()

	select {
	case s := <-e.done:
		return s.result()
	case <-ctx.Done():
	}
	b.mu.Lock()
	inFlight := e.flushed
	if !inFlight {
		b.removeLocked(e)
	}
	b.mu.Unlock()
	if !inFlight {
		// Out of the batch before it went: never sent.
		return nil, fmt.Errorf("producer: not sent, no batch went before the deadline: %w", ctx.Err())
	}
	select {
	case s := <-e.done: // it finished just in time
		return s.result()
	default:
	}
	// The call ends by this deadline too (batchContext), but SQS may have
	// taken the message already. The Guard releases the record, so a later
	// run may send the order again; the consumer dedups it by order id.
	return nil, fmt.Errorf("%w: the SendMessageBatch call was in flight when the time for the send ran out: %w",
		ErrSendUnknown, ctx.Err())
}

// removeLocked takes e out of the pending batch, if it is there.
func (b *batcher) removeLocked(e *entry) {
	for i, p := range b.pending {
		if p == e {
			b.pending = append(b.pending[:i], b.pending[i+1:]...)
			b.pendingBytes -= e.size
			break
		}
	}
	if len(b.pending) == 0 {
		b.stopTimerLocked()
	}
}

func (b *batcher) flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushLocked()
}

func (b *batcher) stopTimerLocked() {
	if b.timer == nil {
		return
	}
	if b.timer.Stop() {
		b.wg.Done() // the function will not run
	}
	b.timer = nil
}

func (b *batcher) flushLocked() {
	b.stopTimerLocked()
	var batch []*entry
	for _, e := range b.pending {
		if e.ctx.Err() != nil {
			continue // its submit is returning "not sent"
		}
		e.flushed = true
		batch = append(batch, e)
	}
	b.pending, b.pendingBytes = nil, 0
	if len(batch) == 0 {
		return
	}
	ctx, cancel := batchContext(b.ctx, batch)
	b.wg.Go(func() {
		defer cancel()
		b.send(ctx, batch)
	})
}

// wait stops the linger timer and waits for every send to finish. Call it
// once no submit is running.
func (b *batcher) wait() {
	b.mu.Lock()
	b.stopTimerLocked()
	b.mu.Unlock()
	b.wg.Wait()
}

// batchContext is the context of a batch's calls, retries included: parent
// (the invocation's), ending at the earliest deadline of the entries'
// contexts. Once an entry's context ends, its order gives up and the Guard
// releases its record, so the batch must not be sent or retried past that
// point. The entries' contexts are the Guard's effect contexts, children of
// parent that end by their deadline or with parent, so the deadline is all
// it takes.
func batchContext(parent context.Context, batch []*entry) (context.Context, context.CancelFunc) {
	var earliest time.Time
	for _, e := range batch {
		if d, ok := e.ctx.Deadline(); ok && (earliest.IsZero() || d.Before(earliest)) {
			earliest = d
		}
	}
	if earliest.IsZero() {
		return context.WithCancel(parent)
	}
	return context.WithDeadline(parent, earliest)
}

// sendBatch sends batch under ctx and tells each entry how it went. Only
// entries that SQS lists as failed without blaming the sender are retried
// here: a failed call was retried by the SDK already, so its entries fail at
// once (and their records are released).
func (p *Producer) sendBatch(ctx context.Context, batch []*entry) {
	pending := batch
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			fail(pending, fmt.Errorf("%w: no time left for attempt %d: %w", ErrSend, attempt, err))
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

func fail(batch []*entry, err error) {
	for _, e := range batch {
		e.done <- sent{err: err}
	}
}

// callError describes a failed SendMessageBatch call.
func callError(ctx context.Context, err error) error {
	var ae smithy.APIError
	switch {
	case errors.As(err, &ae) && ae.ErrorFault() == smithy.FaultClient:
		// BatchRequestTooLong, InvalidParameterValue...: the same request
		// would fail again.
		return fmt.Errorf("%w: SQS rejected the request (sender fault, not retried): %w", ErrSend, err)
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
				OrderIDAttribute: {DataType: aws.String(attributeType), StringValue: aws.String(e.orderID)},
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
	out, err := p.sqs.SendMessageBatch(ctx, in)
	if err != nil {
		return nil, err
	}
	for _, s := range out.Successful {
		if e, ok := byID[aws.ToString(s.Id)]; ok {
			e.done <- sent{messageID: aws.ToString(s.MessageId)}
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
