package sqsbatch

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// A record's message is deleted by the event source mapping when the batch
// response says it succeeded. An invocation that dies after the record is
// done — a crash, an out-of-memory kill, a timeout, brought on by another
// record of the batch — sends no response, and the message comes back: a
// duplicate, harmless, unless it was on its last receive, when it goes to
// the dead-letter queue although its effect happened. WithDelete deletes
// such a message at once.

// Deleter deletes a message of the batch (sqs:DeleteMessage with its
// receipt handle). The consumer runtime (pkg/idem/consumer) implements it
// with the SQS client.
type Deleter interface {
	Delete(ctx context.Context, msg events.SQSMessage) error
}

// WithDelete deletes the message of a record that is done (Executed,
// Duplicate, Unconfirmed, or requeued) on its last receive
// (WithMaxReceiveCount) as soon as it is, not only through the batch
// response: if the invocation then dies, the message does not go to the
// dead-letter queue. A delete that fails is logged; the batch response
// still reports the record done. Default: none.
func WithDelete(d Deleter) Option {
	return func(o *options) error {
		if d == nil {
			return fmt.Errorf("%w: nil deleter", idem.ErrInvalid)
		}
		o.deleter = d
		return nil
	}
}

// deleteIfLast deletes msg at once when it is done on its last receive.
func (h *Handler) deleteIfLast(ctx context.Context, log *slog.Logger, msg events.SQSMessage, r RecordResult) {
	if h.opts.deleter == nil || r.Failed || !h.lastReceive(msg) {
		return
	}
	if err := h.opts.deleter.Delete(ctx, msg); err != nil {
		// The batch response deletes it, if the invocation lives to send it.
		log.WarnContext(ctx, "message not deleted at once", slog.String("message_id", msg.MessageId), slog.String("error", err.Error()))
	}
}
