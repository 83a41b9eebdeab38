package sim

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// More invariants, of one call at a time:
//
//   - an acquire or a commit that fails with "in progress" has a record in
//     its way that may not be taken at that moment, by the caller's clock
//     (failedCall) — on every path: the record the store returned is
//     checked by checkInTheWay, an error that says in progress here;
//   - a call whose context its caller cancelled is never reported as a
//     store failure, StoreError or ErrStore (checkRecord);
//   - an owed receipt keeps at most the capped result (checkRecord; a
//     receipt written, transition);
//   - on a standard queue, a copy on its last receive is never skipped
//     because a batch-mate of its key failed: it would be dead-lettered
//     without running (checkRecord).

// failedCall checks an acquire or a commit of actor on skey, at now (the
// caller's clock, as the store sees it), that failed with err. o.mu is
// held.
func (o *oracle) failedCall(ctx context.Context, actor, skey string, now time.Time, err error) {
	if errors.Is(ctx.Err(), context.Canceled) {
		o.cancelled[actor] = true
	}
	if !errors.Is(err, idem.ErrInProgress) {
		return
	}
	// Nothing runs between the store's last answer and this check (no
	// point): the record is as the store last saw it.
	rec, _ := o.w.store.record(skey)
	if o.takeable(rec, now) {
		o.violatef("%s: told in progress at %s (%v), but the record (%s, lease %s until %s, expires %s) may be taken",
			actor, o.w.at(now), err, statusText(rec.Status), o.lease(rec.Lease), o.w.at(rec.LeaseUntil), o.w.at(rec.ExpiresAt))
	}
}

func statusText(s idem.Status) string {
	if s == "" {
		return "no"
	}
	return string(s)
}

// checkRecord checks what a record was reported as, beyond recorded's
// checks. o.mu is held.
func (o *oracle) checkRecord(p *process, actor string, msg events.SQSMessage, m Message, r sqsbatch.RecordResult) {
	if o.cancelled[actor] && (r.Outcome == idem.StoreError || errors.Is(r.Err, idem.ErrStore)) {
		o.violatef("%s: its caller cancelled it, and it is reported as the store's failure (%s): %v", actor, outcomeName(r), r.Err)
	}
	if r.Outcome == idem.Unconfirmed && o.w.cfg.MaxResult > 0 && len(r.Value) > o.w.cfg.MaxResult {
		// Unconfirmed again for a receipt owed: the value is what the
		// owed receipt kept, which must be the capped result.
		if at := o.attempts[o.current[actor]]; at != nil && at.actor != actor {
			o.violatef("%s: an owed receipt kept a result of %d bytes, over the cap of %d", actor, len(r.Value), o.w.cfg.MaxResult)
		}
	}
	if !o.w.cfg.FIFO && o.w.cfg.LastWait && lastReceive(msg, o.w.cfg) && errors.Is(r.Err, sqsbatch.ErrGroupFailed) {
		o.violatef("%s: on its last receive, skipped because a batch-mate of its key failed: it goes to the DLQ without running", actor)
	}
}

// lastReceive reports whether msg is on its last receive before the DLQ.
func lastReceive(msg events.SQSMessage, c Config) bool {
	n, _ := strconv.Atoi(msg.Attributes["ApproximateReceiveCount"])
	return n >= c.MaxReceives
}

// queueID is the queue's own name of the message an actor ("i03/m1.r9")
// runs.
func queueID(actor string) string { return actor[strings.LastIndexByte(actor, '/')+1:] }

// receiptWrite reports whether actor's request is a receipt write: its
// attempt ran the effect and has no receipt yet.
func (o *oracle) receiptWrite(actor string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	at := o.attempts[o.current[actor]]
	return at != nil && !at.effectAt.IsZero() && at.landedAt.IsZero()
}
