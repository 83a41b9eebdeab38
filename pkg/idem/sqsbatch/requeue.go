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
// it would without WithRequeue, and so does one whose count is not a
// decimal Number from 0 to MaxRequeues: a producer cannot lift the bound.
const RequeuesAttribute = "sqsidem-requeues"

// MessageIDAttribute is the message attribute a requeued copy carries the
// id of the message it copies in (a String; a copy of a copy keeps the
// first id), so that MessageID keys it as that message (OriginalMessageID).
const MessageIDAttribute = "sqsidem-message-id"

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
// is then done (RecordResult.Requeued). The copy carries RequeuesAttribute
// and MessageIDAttribute; a message without room for both (SQS allows 10
// message attributes) is not requeued. Standard queues only: FIFO queues
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
	n, ok := requeueCount(msg)
	if !ok {
		return msg, 0, fmt.Sprintf("invalid requeue count: %s is not a Number from 0 to %d", RequeuesAttribute, MaxRequeues)
	}
	if n >= MaxRequeues {
		return msg, 0, fmt.Sprintf("requeued %d times already", n)
	}
	id := OriginalMessageID(msg)
	attrs := maps.Clone(msg.MessageAttributes)
	if attrs == nil {
		attrs = map[string]events.SQSMessageAttribute{}
	}
	count := strconv.Itoa(n + 1)
	attrs[RequeuesAttribute] = events.SQSMessageAttribute{DataType: "Number", StringValue: &count}
	// Always, whatever the KeyFunc: the handler cannot tell whether a key
	// of the user's own derives from the message id, and a copy under a
	// new id would run the effect again.
	attrs[MessageIDAttribute] = events.SQSMessageAttribute{DataType: "String", StringValue: &id}
	if len(attrs) > maxAttributes {
		return msg, 0, fmt.Sprintf("it has %d message attributes, and SQS allows %d with the %s and %s a copy carries",
			len(msg.MessageAttributes), maxAttributes, RequeuesAttribute, MessageIDAttribute)
	}
	msg.MessageAttributes = attrs
	return msg, delay, ""
}

// requeueCount is how often msg was requeued, 0 when it carries no count;
// false when its count is not a decimal Number from 0 to MaxRequeues. It
// comes from the message, that is from anyone who can send to the queue, so
// nothing but a count this package could have written is trusted.
func requeueCount(msg events.SQSMessage) (int, bool) {
	a, ok := msg.MessageAttributes[RequeuesAttribute]
	if !ok {
		return 0, true
	}
	if a.DataType != "Number" || a.StringValue == nil {
		return 0, false
	}
	n, err := strconv.Atoi(*a.StringValue)
	return n, err == nil && n >= 0 && n <= MaxRequeues
}
