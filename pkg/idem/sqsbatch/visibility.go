package sqsbatch

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// A record that meets InProgress — another attempt holds its key — fails
// and comes back. By default it comes back after the queue's visibility
// timeout, and every such return counts towards maxReceiveCount: a copy that
// keeps meeting a slow holder ends in the dead-letter queue although its
// effect happened. Three options keep the DLQ for real failures:
// WithVisibility returns the copy when the holder's lease ends,
// WithMaxReceiveCount makes a copy on its last receive wait for the holder
// within the invocation instead of failing, and WithRequeue sends a copy
// that cannot wait so long back to its queue, delayed (requeue.go).

// Visibility changes the visibility timeout of a message of the batch
// (sqs:ChangeMessageVisibility with its receipt handle). The consumer
// runtime (pkg/idem/consumer) implements it with the SQS client.
type Visibility interface {
	ChangeVisibility(ctx context.Context, msg events.SQSMessage, timeout time.Duration) error
}

// WithVisibility makes a record that meets InProgress visible again when
// the holder's lease ends (and a second after), rather than after the
// queue's whole visibility timeout. Default: none.
func WithVisibility(v Visibility) Option {
	return func(o *options) error {
		if v == nil {
			return fmt.Errorf("%w: nil visibility", idem.ErrInvalid)
		}
		o.visibility = v
		return nil
	}
}

// WithMaxReceiveCount is the queue's maxReceiveCount (its redrive policy).
// A record that meets InProgress on its last receive waits, within the
// invocation, for the holder's lease to end and runs again, instead of
// failing into the dead-letter queue. Default 0: never wait.
func WithMaxReceiveCount(n int) Option {
	return func(o *options) error {
		if n < 0 {
			return fmt.Errorf("%w: max receive count %d is negative", idem.ErrInvalid, n)
		}
		o.maxReceives = n
		return nil
	}
}

// holderSlack is added to the holder's lease end before the copy tries
// again: the holder's clock may run a little behind ours, and its receipt
// may be landing.
const holderSlack = time.Second

// lastWaits bounds how often a copy on its last receive waits for a
// holder: a holder that is taken over again and again is not one to wait
// for.
const lastWaits = 3

// inProgress handles a record that met InProgress: on its last receive it
// waits for the holder and runs again (run), and when it cannot wait so
// long, requeues the record (requeued: the record is done); otherwise,
// with a Visibility, it brings the record's return forward to the holder's
// lease end. It returns the outcome in force.
func (h *Handler) inProgress(ctx context.Context, log *slog.Logger, msg events.SQSMessage, res idem.Result, err error,
	run func() (idem.Result, error)) (_ idem.Result, requeued bool, _ error) {
	if h.lastReceive(msg) {
		// When the copy can be requeued, it waits only if it will still
		// have time to run after the holder: twice the Guard's margin (the
		// margin, and as much for the effect); otherwise it is requeued,
		// below. When it cannot, waiting is its only chance.
		var after time.Duration
		if h.opts.requeue != nil && !isFIFO(msg) {
			after = 2 * h.guard.SafetyMargin()
		}
		for range lastWaits {
			if res.Outcome != idem.InProgress || !sleepUntil(ctx, res.LeaseUntil.Add(holderSlack), after) {
				break
			}
			res, err = run()
		}
		if res.Outcome == idem.InProgress {
			requeued = h.requeue(ctx, log, msg, res)
		}
		return res, requeued, err
	}
	if h.opts.visibility == nil || res.LeaseUntil.IsZero() {
		return res, false, err
	}
	timeout := time.Duration(math.Ceil((time.Until(res.LeaseUntil) + holderSlack).Seconds())) * time.Second
	if verr := h.opts.visibility.ChangeVisibility(ctx, msg, max(timeout, time.Second)); verr != nil {
		// The record comes back after the queue's visibility timeout: later, not lost.
		log.WarnContext(ctx, "visibility not changed", slog.String("message_id", msg.MessageId), slog.String("error", verr.Error()))
	}
	return res, false, err
}

// sleepUntil waits until t; false, at once, when t is unknown or less than
// after before ctx's deadline, and when ctx ends first.
func sleepUntil(ctx context.Context, t time.Time, after time.Duration) bool {
	if d, ok := ctx.Deadline(); t.IsZero() || (ok && t.Add(after).After(d)) {
		return false
	}
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// lastReceive reports whether msg is on its last receive (WithMaxReceiveCount):
// failed, it would go to the dead-letter queue.
func (h *Handler) lastReceive(msg events.SQSMessage) bool {
	return h.opts.maxReceives > 0 && receiveCount(msg) >= h.opts.maxReceives
}

// receiveCount is the message's ApproximateReceiveCount, 0 when unknown.
func receiveCount(msg events.SQSMessage) int {
	n, _ := strconv.Atoi(msg.Attributes["ApproximateReceiveCount"])
	return n
}
