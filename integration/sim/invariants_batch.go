package sim

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// The invariants of a batch, checked when its invocation responds:
//
//   - every record is reported once, and the response lists exactly the
//     failed ones: a record that is done is never a batch item failure,
//     nor is the batch failed as a whole while one is done (a panicking
//     hook or tracer included: the invocation survives it, invoke);
//   - the records of a unit (a FIFO message group; on a standard queue the
//     copies of a key) run one after the other, in the batch's order;
//   - on a FIFO queue, after a record of a group fails, whatever failed it
//     (the effect, in progress, the store, a mismatch, a rejection), the
//     rest of the group is not run, and reported failed;
//   - a record is skipped (ErrGroupFailed) only after an earlier record of
//     its unit failed;
//   - nothing is requeued to a FIFO queue, nor more often than the
//     message's requeue count allows; a count its producer set that is not
//     a count allows none (requeued).

// batch checks the response to b: resp, or err for the whole batch.
func (o *oracle) batch(b *batchRun, resp events.SQSEventResponse, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	for i, m := range b.records {
		r := b.results[i]
		switch {
		case b.reports[i] != 1:
			o.violatef("%s: reported %d times", m.ReceiptHandle, b.reports[i])
		case r.Failed != failed[m.MessageId]:
			o.violatef("%s: %s (failed %v), but the batch response says failed %v", m.ReceiptHandle, outcomeName(r), r.Failed, failed[m.MessageId])
		case err != nil && !r.Failed:
			o.violatef("%s: done (%s), but the whole batch failed (%v): it comes back", m.ReceiptHandle, outcomeName(r), err)
		}
	}
	for _, unit := range o.units(b) {
		o.checkUnit(b, unit)
	}
}

// units are the records of b that must run one after the other: a FIFO
// message group, or the copies of an item (a record without a key alone).
func (o *oracle) units(b *batchRun) [][]int {
	var units [][]int
	index := map[string]int{}
	for i, m := range b.records {
		id := "item " + o.message(m.ReceiptHandle).Key
		switch {
		case o.w.cfg.FIFO:
			id = "group " + m.Attributes["MessageGroupId"]
		case o.message(m.ReceiptHandle).NoKey:
			id = "record " + m.ReceiptHandle
		}
		u, ok := index[id]
		if !ok {
			u = len(units)
			index[id] = u
			units = append(units, nil)
		}
		units[u] = append(units[u], i)
	}
	return units
}

func (o *oracle) checkUnit(b *batchRun, unit []int) {
	fifo := o.w.cfg.FIFO
	failedAt, prevEnd := -1, 0
	lastHeld := "" // the item of the unit's last record that ran and was held
	for _, i := range unit {
		m, r := b.records[i], b.results[i]
		item := o.message(m.ReceiptHandle)
		// A record not run after a failure is skipped, or, a copy of the
		// key the unit held last, held as well (it reaches the DLQ with
		// the same reason).
		heldCopy := b.started[i] == 0 && r.Outcome == idem.Held
		skipped := errors.Is(r.Err, sqsbatch.ErrGroupFailed) || heldCopy
		switch {
		case b.started[i] > 0 && b.started[i] < prevEnd:
			o.violatef("%s: began before the record before it in its unit was done", m.ReceiptHandle)
		case skipped && failedAt < 0:
			o.violatef("%s: skipped (%s: %v), but no earlier record of its unit failed", m.ReceiptHandle, outcomeName(r), r.Err)
		case heldCopy && (item.NoKey || item.Key != lastHeld):
			o.violatef("%s: held without running, but the record its unit held last is not of its key (%s)", m.ReceiptHandle, item.Key)
		case heldCopy && !errors.Is(r.Err, idem.ErrHeld):
			o.violatef("%s: a copy of a held key reported held with %v, not idem.ErrHeld", m.ReceiptHandle, r.Err)
		case skipped && !heldCopy && !item.NoKey && item.Key == lastHeld:
			o.violatef("%s: a copy of a key held in its batch, skipped (%v): every copy of a held key is held, and reaches the DLQ with that reason", m.ReceiptHandle, r.Err)
		case fifo && failedAt >= 0 && (!skipped || b.started[i] > 0 || !r.Failed):
			f := b.results[failedAt]
			o.violatef("%s: %s after %s of its message group failed (%s: %v): a group stops at a failure",
				m.ReceiptHandle, outcomeName(r), b.records[failedAt].ReceiptHandle, outcomeName(f), f.Err)
		}
		if r.Failed && failedAt < 0 {
			failedAt = i
		}
		if b.started[i] > 0 && r.Outcome == idem.Held {
			lastHeld = item.Key
		}
		prevEnd = max(prevEnd, b.ended[i])
	}
}

// requeued checks a copy the handler sent to the queue again.
func (o *oracle) requeued(actor string, m *sqsMessage) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.w.cfg.FIFO {
		o.violatef("%s: requeued to a FIFO queue, out of its group's order", actor)
	}
	limit, why := sqsbatch.MaxRequeues, ""
	if m.Requeues != "" {
		n, err := strconv.Atoi(m.Requeues)
		switch {
		case err != nil || n < 0:
			limit, why = 0, fmt.Sprintf(", and its producer set a count of %q, which is none", m.Requeues)
		default:
			limit, why = max(0, limit-n), fmt.Sprintf(", and its producer set a count of %d", n)
		}
	}
	if m.depth > limit {
		o.violatef("%s: its message requeued %d times, at most %d allowed (sqsbatch.MaxRequeues is %d%s)", actor, m.depth, limit, sqsbatch.MaxRequeues, why)
	}
}
