package sqsbatch

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// A record that fails on the store (idem.StoreError: the store failed, or
// was too slow, before the effect ran) comes back after the queue's
// visibility timeout, and every return counts towards maxReceiveCount: a
// store that is throttled or slow for a few visibility timeouts sends
// messages whose effect never ran to the dead-letter queue, although a
// later delivery would have run it. WithStoreBackoff spaces their receives
// instead, so that such a store costs time, not the DLQ.

// MaxStoreBackoff is the longest a record that failed on the store is kept
// hidden. SQS allows a message 12 hours of visibility counted from its
// receive; the event source mapping's batching window (at most 5 minutes)
// and the invocation (at most 15) may have used 20 minutes of them, and a
// longer change is refused.
const MaxStoreBackoff = 12*time.Hour - 20*time.Minute

// MaxVisibilityTimeout is the longest visibility timeout SQS allows a queue.
const MaxVisibilityTimeout = 12 * time.Hour

// WithStoreBackoff makes a record that failed on the store, and a record
// not run after such a failure of its key or FIFO group (ErrGroupFailed),
// stay hidden for StoreBackoff(visibility, its receive count), less up to a
// quarter at random, instead of the queue's visibility timeout, with
// WithVisibility. visibility is the queue's visibility timeout, from 1 s to
// MaxVisibilityTimeout: a shorter one would bring records back sooner than
// the queue does. No change is asked on a record's last receive
// (WithMaxReceiveCount), where it would only delay the move to the
// dead-letter queue, nor when the backoff is no longer than visibility.
// The change is asked as soon as the record has failed, so that an
// invocation that dies later (another record crashing it) does not lose
// it, and never brings the record back before the invocation's deadline.
// One that fails is logged ("visibility not changed") and the record comes
// back after the queue's visibility timeout. Default: none.
func WithStoreBackoff(visibility time.Duration) Option {
	return func(o *options) error {
		if visibility < time.Second || visibility > MaxVisibilityTimeout {
			return fmt.Errorf("%w: store backoff base %s is not a visibility timeout from 1s to %s", idem.ErrInvalid, visibility, MaxVisibilityTimeout)
		}
		o.storeBackoff = visibility
		return nil
	}
}

// StoreBackoff is the longest a message that failed on the store on its
// receive-th receive (ApproximateReceiveCount) stays hidden under
// WithStoreBackoff(visibility): visibility × 2^receive, at most
// MaxStoreBackoff; it stays hidden at least three quarters of that. With a
// visibility timeout of 3 minutes: 6, 12, 24, 48 minutes (from 4.5, 9, 18,
// 36) after the first, second, third and fourth receive, where the queue
// alone would give 3 each time. A receive count below 1 (unknown) counts
// as 1.
func StoreBackoff(visibility time.Duration, receive int) time.Duration {
	d := min(visibility, MaxStoreBackoff)
	for range max(receive, 1) {
		if d >= MaxStoreBackoff/2 {
			return MaxStoreBackoff
		}
		d *= 2
	}
	return d
}

// backOff hides msg, whose record failed on the store, for its backoff
// (see WithStoreBackoff). ctx is the records' context: the change is asked
// with late (afterRecords), which outlasts it.
func (h *Handler) backOff(ctx, late context.Context, log *slog.Logger, msg events.SQSMessage) {
	if h.opts.storeBackoff == 0 || h.opts.visibility == nil || h.lastReceive(msg) {
		return
	}
	timeout := StoreBackoff(h.opts.storeBackoff, receiveCount(msg))
	if timeout <= h.opts.storeBackoff {
		return // the queue hides it as long
	}
	// Records that failed together (a batch, or the whole queue while the
	// store was down) come back spread out, not all at once onto a store
	// that is just recovering: between three quarters of the backoff and
	// all of it, never less than the queue's visibility timeout.
	timeout = max(timeout-rand.N(timeout/4+1), h.opts.storeBackoff)
	if end, ok := ctx.Deadline(); ok {
		// Not back while this invocation runs, whatever the base.
		timeout = max(timeout, time.Until(end))
	}
	timeout = time.Duration(math.Ceil(timeout.Seconds())) * time.Second
	if err := h.opts.visibility.ChangeVisibility(late, msg, timeout); err != nil {
		// It comes back after the queue's visibility timeout: sooner, not lost.
		log.WarnContext(ctx, "visibility not changed", slog.String("message_id", msg.MessageId), slog.String("error", err.Error()))
	}
}

// afterRecords is the context of the store backoff's visibility changes:
// a store that timed out has used up the records' context ctx, which ends
// before the invocation does (withResponseTime), and a change still gets
// half of the time kept for the response.
func afterRecords(ctx, invocation context.Context) (context.Context, context.CancelFunc) {
	end, ok := ctx.Deadline()
	last, ok2 := invocation.Deadline()
	if !ok || !ok2 {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(context.WithoutCancel(ctx), end.Add(last.Sub(end)/2))
}
