package sqsbatch

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// A copy on its last receive that meets InProgress waits for the holder
// within the invocation (WithMaxReceiveCount). When the holder's lease ends
// after the invocation's deadline, it cannot: without WithRequeue the copy
// fails into the dead-letter queue although the holder may well finish its
// effect. With it, the copy is sent to its queue again as a new message,
// delayed until the holder's lease ends, and the record is done: the copy
// is not lost (it runs if the holder failed), and the DLQ keeps only real
// failures.

// Requeue sends msg to the queue it came from (msg.EventSourceARN) again,
// as a new message delayed by delay (sqs:SendMessage with DelaySeconds),
// with msg's body and message attributes. The consumer runtime
// (pkg/idem/consumer) implements it with the SQS client.
type Requeue interface {
	Requeue(ctx context.Context, msg events.SQSMessage, delay time.Duration) error
}

// RequeuesAttribute is the message attribute counting how often a message
// was requeued (a Number). A message requeued MaxRequeues times fails as
// it would without WithRequeue.
const RequeuesAttribute = "sqsidem-requeues"

// MaxRequeues bounds how often one message is requeued: a holder that
// keeps its key for so long is not one to keep waiting for.
const MaxRequeues = 3

// MaxDelay is SQS's longest message delay; a holder whose lease ends
// later than that is not waited for.
const MaxDelay = 15 * time.Minute

// maxAttributes is how many message attributes SQS allows a message.
const maxAttributes = 10

// WithRequeue sends a copy on its last receive (WithMaxReceiveCount) that
// meets InProgress, and cannot wait for the holder within the invocation,
// to its queue again, delayed until the holder's lease ends; the record
// is then done (RecordResult.Requeued). Standard queues only: FIFO queues
// have no per-message delay, and a resent message would leave its group's
// order. Default: none (the copy fails into the dead-letter queue).
func WithRequeue(r Requeue) Option {
	return func(o *options) error {
		if r == nil {
			return fmt.Errorf("%w: nil requeue", idem.ErrInvalid)
		}
		o.requeue = r
		return nil
	}
}

// requeue sends msg again, delayed until the holder's lease ends (res),
// and reports whether it did; a message that cannot be requeued fails as
// before, and why is logged.
func (h *Handler) requeue(ctx context.Context, log *slog.Logger, msg events.SQSMessage, res idem.Result) bool {
	if h.opts.requeue == nil {
		return false
	}
	copyMsg, delay, why := toRequeue(msg, res.LeaseUntil, time.Now())
	if why == "" {
		if err := h.opts.requeue.Requeue(ctx, copyMsg, delay); err != nil {
			why = "sending it failed: " + err.Error()
		}
	}
	if why != "" {
		log.WarnContext(ctx, "record not requeued", slog.String("message_id", msg.MessageId), slog.String("reason", why))
		return false
	}
	log.DebugContext(ctx, "requeued", slog.String("message_id", msg.MessageId), slog.Duration("delay", delay))
	return true
}

// toRequeue is the message to send for msg and its delay, from now until
// the holder's lease ends (and holderSlack), or why msg is not to be
// requeued.
func toRequeue(msg events.SQSMessage, leaseUntil, now time.Time) (events.SQSMessage, time.Duration, string) {
	if isFIFO(msg) {
		return msg, 0, "a FIFO queue has no per-message delay"
	}
	if leaseUntil.IsZero() {
		return msg, 0, "the holder's lease end is unknown"
	}
	delay := time.Duration(math.Ceil((leaseUntil.Sub(now) + holderSlack).Seconds())) * time.Second
	delay = max(delay, time.Second)
	if delay > MaxDelay {
		return msg, 0, fmt.Sprintf("the holder's lease ends in %s, after SQS's longest delay (%s)", delay, MaxDelay)
	}
	n := 0
	if a, ok := msg.MessageAttributes[RequeuesAttribute]; ok && a.StringValue != nil {
		n, _ = strconv.Atoi(*a.StringValue)
	}
	if n >= MaxRequeues {
		return msg, 0, fmt.Sprintf("requeued %d times already", n)
	}
	attrs := maps.Clone(msg.MessageAttributes)
	if attrs == nil {
		attrs = map[string]events.SQSMessageAttribute{}
	}
	count := strconv.Itoa(n + 1)
	attrs[RequeuesAttribute] = events.SQSMessageAttribute{DataType: "Number", StringValue: &count}
	if len(attrs) > maxAttributes {
		return msg, 0, fmt.Sprintf("it has %d message attributes, and SQS allows %d", len(msg.MessageAttributes), maxAttributes)
	}
	msg.MessageAttributes = attrs
	return msg, delay, ""
}
