package sim

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// The invariants, checked as the schedule goes:
//
//   - a record is only ever taken when it may be: absent, expired, FAILED,
//     or IN_PROGRESS with a lease that ended before the taker's now
//     (transition); and a record that may be taken never stands in the way
//     (checkInTheWay);
//   - a receipt or a release lands only on the record of the attempt that
//     writes it: fencing (transition);
//   - an attempt's own write is never reported as someone else's: not as
//     in progress, lease lost, a duplicate or a mismatch (recorded, and the
//     oracle's hooks);
//   - a copy is never told in progress because of a lease of its own batch
//     (sqsbatch runs the copies of a key one after the other);
//   - transactional mode never applies an effect twice while its receipt is
//     retained; lease mode does only where the first attempt's fenced
//     receipt could not land before another attempt took over — a crash, a
//     freeze, store faults, or a clock skew past the safety margin — each
//     double classified by its cause (effect, txApplied);
//   - no message is deleted whose effect neither ran nor is recorded
//     (deleted);
//   - a duplicate is answered only from a receipt that was written and is
//     retained, for the same payload, and replays that receipt's result
//     (recorded).
//
// Remote effects have invariants of their own (invariants_remote.go).

// takeable is the condition of an acquire, on a record as the store keeps
// it, at the taker's now (both in the store's frame). DynamoDB keeps
// expiresAt in seconds, compared with the taker's now in seconds.
func (o *oracle) takeable(rec idem.Record, now time.Time) bool {
	expired := !rec.ExpiresAt.IsZero() && o.expired(rec.ExpiresAt, now)
	return rec.Status == "" || expired || rec.Status == idem.StatusFailed || rec.Status == idem.StatusUnknown ||
		(rec.Status == idem.StatusInProgress && rec.LeaseUntil.UnixMilli() < now.UnixMilli())
}

// checkInTheWay: a record that may be taken must not be reported in the
// way of an acquire or a commit at now.
func (o *oracle) checkInTheWay(actor string, a idem.Acquisition, rec idem.Record) {
	if rec.Lease != a.Lease && o.takeable(rec, a.Now) {
		o.violatef("%s: %s record (lease %s until %s, expires %s) reported in the way at %s, though it may be taken",
			actor, rec.Status, o.lease(rec.Lease), o.w.at(rec.LeaseUntil), o.w.at(rec.ExpiresAt), o.w.at(a.Now))
	}
}

// transition checks a write the server applied, from before to after,
// sent by actor for its attempt holding token.
func (o *oracle) transition(actor, token, skey string, before, after idem.Record, existed, exists bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if isOperator(actor) {
		o.operatorWrote(actor, skey, before, after, existed, exists)
		return
	}
	if o.w.cfg.Remote {
		o.remoteTransition(actor, token, skey, before, after, existed, exists)
	}
	if exists && after.Status == idem.StatusCompleted && after.Lease == token &&
		(before.Status != idem.StatusCompleted || before.Lease != token || !existed) {
		o.landedReceipt(actor, skey, token, after)
	}
	if exists && existed && (after.Status == idem.StatusFailed || after.Status == idem.StatusUnknown) && after.Lease == token && before.Status == idem.StatusInProgress {
		if at := o.attempts[token]; at != nil && at.releasedAt.IsZero() {
			at.releasedAt, at.releasedSeq = time.Now(), o.seq
		}
	}
	switch {
	case !exists:
		// The write took the record, and the server dropped it at once:
		// the expiry it wrote had passed by the server's clock (an
		// acquire whose now was read long before it landed, its process
		// frozen in between). (A request that left no record where there
		// was none changed nothing: a script loaded, say.)
		if at := o.attempts[token]; at != nil && existed && before.Lease != token {
			o.noteTake(at, before, existed, at.acquiredAt)
			o.took(at)
		}
		return
	case after.Lease != before.Lease || !existed:
		// A new attempt took the record (an acquire, a commit), whether
		// or not its caller lives to hear of it.
		o.noteTake(o.attempts[after.Lease], before, existed, after.UpdatedAt)
		o.took(o.attempts[after.Lease])
		if existed && !o.takeable(before, after.UpdatedAt) {
			o.violatef("%s: took %s's record (%s, lease until %s, expires %s) at %s, when it could not be taken",
				actor, o.lease(before.Lease), before.Status, o.w.at(before.LeaseUntil), o.w.at(before.ExpiresAt), o.w.at(after.UpdatedAt))
		}
		if after.Lease != token {
			o.violatef("%s: wrote lease %s while its attempt holds %s", actor, o.lease(after.Lease), o.lease(token))
		}
	case after.Status != before.Status || after.UpdatedAt != before.UpdatedAt:
		// A receipt or a release: fenced by the writer's lease.
		if before.Lease != token {
			o.violatef("%s: its attempt (lease %s) wrote %s on the record of attempt %s: unfenced",
				actor, o.lease(token), after.Status, o.lease(before.Lease))
		}
	}
}

// noteTake notes what at took over when it took the record, before, at
// now (its acquire's, in the store's frame), unless its caller has heard
// of it already (an acquire sent again that takes the record again).
// o.mu is held.
func (o *oracle) noteTake(at *attempt, before idem.Record, existed bool, now time.Time) {
	if at == nil || at.told {
		return
	}
	at.prev, at.renewed, at.prevSeen = before.Status, true, true
	switch {
	case !existed:
		at.prev = ""
	case before.ExpiresAt.IsZero() || !o.expired(before.ExpiresAt, now):
		at.renewed = false
	default:
		at.prev = "" // expired: it counts as absent
		if unknownOutcome(before.Status) {
			o.stats.Lapsed++
		}
	}
}

// landedReceipt notes a receipt the server wrote (its reply may be lost,
// its process dead: it is there all the same).
func (o *oracle) landedReceipt(writer, skey, token string, rec idem.Record) {
	at := o.attempts[token]
	if at == nil {
		o.violatef("a receipt for %s with an unknown lease %s", short(skey), o.lease(token))
		return
	}
	if at.landedAt.IsZero() {
		o.owedAcross(writer, at)
	}
	at.landedAt = time.Now()
	if c := o.w.cfg.MaxResult; c > 0 && len(rec.Result) > c {
		o.violatef("%s: a receipt keeps a result of %d bytes, over the Guard's cap of %d", short(skey), len(rec.Result), c)
	}
	if o.w.cfg.Remote && len(o.applied[at.key]) == 0 {
		o.violatef("%s: a receipt for %s (lease %s), whose effect never took place on the remote system", at.actor, at.key, o.lease(token))
	}
	o.landed[skey] = append(o.landed[skey], landedReceipt{token: token, value: rec.Result, omitted: rec.ResultOmitted,
		variant: at.variant, expiresAt: rec.ExpiresAt, at: time.Now()})
}

// expired reports whether a receipt expiring at expiresAt counts as absent
// at now (both as the store sees them), in the store's unit: DynamoDB keeps
// expiresAt in seconds, Redis in milliseconds.
func (o *oracle) expired(expiresAt, now time.Time) bool {
	if o.w.cfg.Backend == "dynamodb" {
		return expiresAt.Unix() < now.Unix()
	}
	return expiresAt.UnixMilli() < now.UnixMilli()
}

// effect is told that actor's effect took place under token; it returns
// the effect's result. What took place is the effect of actor's item (its
// business key, or the message it keys records by), whatever key it ran
// under: two effects of one item are a double, under one key or two.
func (o *oracle) effect(p *process, actor string, token string) []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	key := o.message(actor).Key
	at := o.attempts[token]
	if at == nil { // cannot be: an effect runs under a lease taken
		o.violatef("%s: effect for %s under unknown lease %s", actor, key, o.lease(token))
		return nil
	}
	at.effectAt = time.Now()
	o.stats.Effects++
	o.w.logf(actor, "EFFECT %s (lease %s)", key, o.lease(token))
	for _, a := range o.applied[key] {
		o.double(a, at)
	}
	o.applied[key] = append(o.applied[key], at)
	value := []byte(key + "=" + o.lease(token))
	if o.message(actor).Large {
		value = bytes.Repeat(value, 8)
	}
	at.value = value
	return value
}

// double classifies a second application (b) of an effect applied by a.
func (o *oracle) double(a, b *attempt) {
	if a.skey != b.skey {
		o.violatef("double effect for %s: %s (lease %s, %s) and %s (lease %s, %s) ran it under two keys (%s and %s)",
			a.key, a.actor, o.lease(a.token), a.proc.name, b.actor, o.lease(b.token), b.proc.name, short(a.skey), short(b.skey))
		return
	}
	var cause string
	if o.w.cfg.Remote {
		if cause = o.remoteCause(a, b); cause == "" {
			return // a violation, reported
		}
	} else if cause = o.cause(a, b); cause == "" {
		o.violatef("double effect for %s: %s (lease %s, %s) and %s (lease %s, %s), unexplained",
			a.key, a.actor, o.lease(a.token), a.proc.name, b.actor, o.lease(b.token), b.proc.name)
		return
	}
	o.doubles[cause]++
	o.w.logf("ORACLE", "double effect for %s: %s then %s: %s", a.key, a.actor, b.actor, cause)
}

// cause says why two attempts that both ran the effect were not kept
// apart (the lease-mode window), or "" when nothing explains it. Of the
// two, the one that took the record first (e) is the one whose receipt did
// not keep the other out; what matters is why the attempt that took the
// record from it next (x) could.
func (o *oracle) cause(a, b *attempt) string {
	for _, r := range o.landed[a.skey] {
		// A receipt written after a's effect (a's, or that of whoever
		// took over from a) that had expired when b took the record: b
		// runs in a new retention period. Expired by the taker's clock, or
		// gone by the service's: TTL may have deleted it before a late
		// request of the taker landed.
		if !r.at.Before(a.effectAt) && (o.expired(r.expiresAt, b.acquiredAt) || o.expired(r.expiresAt, time.Now())) {
			return "receipt expired (retention)"
		}
	}
	e := a
	if b.acquiredSeq < a.acquiredSeq {
		e = b
	}
	if l := o.later(a, b); !e.expiresAt.IsZero() && (o.expired(e.expiresAt, l.acquiredAt) || o.expired(e.expiresAt, time.Now())) {
		return "record expired (retention)" // the first attempt's record, receipt or not, expired before the second
	}
	x := o.takerAfter(e)
	if x == nil {
		return ""
	}
	from, to := e.effectAt, x.acquiredReal
	if !e.landedAt.IsZero() && e.landedAt.Before(to) {
		// e's receipt was there: only its expiry, by the clock of the
		// attempt that took the record (x), let x take it.
		for _, r := range o.landed[e.skey] {
			if r.token == e.token && o.expired(r.expiresAt, x.acquiredAt) {
				return "receipt expired (retention)"
			}
		}
		return ""
	}
	if d, ok := o.deaths[e.proc]; ok && !d.Before(from) && !d.After(to) {
		return "crash between the effect and the receipt"
	}
	for _, f := range o.freezes[e.proc] {
		if f[0].Before(to) && f[1].After(from) {
			return "frozen between the effect and the receipt (zombie)"
		}
	}
	if x.proc == e.proc && !e.gaveUpAt.IsZero() && e.gaveUpAt.Before(to) {
		return "" // its own process knew the effect had run (the receipt it owed)
	}
	if !e.gaveUpAt.IsZero() && e.gaveUpAt.Before(to) && e.gaveUpAt.Add(time.Millisecond).Before(e.deadline) {
		return "" // it stopped writing its receipt before its deadline
	}
	for _, f := range e.faults {
		if !f.Before(from) && !f.After(to) {
			return "receipt write failed until another attempt took over (store faults)"
		}
	}
	// x read e's lease as ended while, by e's clock, it was not: their
	// clocks differ by more than the margin meant to absorb it.
	if d := x.proc.skew - e.proc.skew; d > o.w.cfg.Margin {
		return skewPastMargin
	}
	return ""
}

// later is whichever of a and b took the record last.
func (o *oracle) later(a, b *attempt) *attempt {
	if b.acquiredSeq < a.acquiredSeq {
		return a
	}
	return b
}

// takerAfter is the attempt that took e's record after e did.
func (o *oracle) takerAfter(e *attempt) *attempt {
	for _, t := range o.taken[e.skey] {
		if t.acquiredSeq > e.acquiredSeq {
			return t
		}
	}
	return nil
}

// txApplied is told that a transaction applied the effect of key.
func (o *oracle) txApplied(actor, token, key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stats.Effects++
	o.w.logf(actor, "EFFECT %s (committed)", key)
	at := o.attempts[token]
	if at == nil {
		o.violatef("%s: transaction for %s without a commit", actor, key)
		return
	}
	at.effectAt = time.Now()
	for _, a := range o.applied[key] {
		expired := false
		for _, r := range o.landed[a.skey] {
			expired = expired || (!r.at.Before(a.effectAt) && (o.expired(r.expiresAt, at.acquiredAt) || o.expired(r.expiresAt, time.Now())))
		}
		if !expired {
			o.violatef("transactional mode applied %s twice: %s and %s", key, a.actor, actor)
		} else {
			o.doubles["receipt expired (retention)"]++
		}
	}
	o.applied[key] = append(o.applied[key], at)
}

// recorded checks what sqsbatch reported for a delivery.
func (o *oracle) recorded(p *process, actor string, msg events.SQSMessage, r sqsbatch.RecordResult) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stats.Outcomes[outcomeName(r)]++
	o.reported[actor] = true
	if lastReceive(msg, o.w.cfg) {
		o.last[queueID(actor)] = r.Outcome
	}
	o.w.logf(actor, "→ %s %v", outcomeName(r), errText(r.Err))
	m := o.message(actor)
	o.checkRecord(p, actor, msg, m, r)
	if o.own[actor] && (r.Outcome == idem.InProgress || r.Outcome == idem.Duplicate || r.Outcome == idem.Mismatch) {
		o.violatef("%s: its own lease, found by a retried acquire, reported as %s", actor, r.Outcome)
	}
	if h := o.sameInv[actor]; h != "" && r.Outcome == idem.InProgress {
		o.violatef("%s: in progress because of %s, a copy in its own batch", actor, h)
	}
	// Every message of a schedule is valid, and every option it uses is
	// one New accepted: a rejection, or a store error where no fault was
	// injected, is a false error.
	if r.Outcome == idem.Rejected && !m.NoKey {
		o.violatef("%s: a valid message rejected: %v", actor, r.Err)
	}
	if r.Outcome == idem.StoreError && o.faulted[actor] == 0 {
		o.violatef("%s: a store error, but no fault was injected: %v", actor, r.Err)
	}
	if r.Outcome == idem.Held {
		o.checkHeld(actor, m)
	}
	if o.w.cfg.Mode == "lease" {
		o.checkRerun(actor, r)
	}
	if r.Outcome != idem.Duplicate {
		return
	}
	// A duplicate stands on a receipt written, or on an effect this very
	// process ran and owes the receipt of; either retained when the Guard
	// decided, for the same payload, with the result it replays.
	evidence := slices.Clone(o.landed[o.skeyOf[m.Key]])
	for _, a := range append(slices.Clone(o.applied[m.Key]), o.reconciledBy[m.Key]...) {
		if a.proc == p && !a.gaveUpAt.IsZero() {
			evidence = append(evidence, landedReceipt{token: a.token, value: a.value, variant: a.variant,
				expiresAt: a.expiresAt.Add(time.Second), omitted: o.dropped(a.value)})
		}
	}
	if len(evidence) == 0 {
		o.violatef("%s: duplicate of %s, but no receipt was ever written, nor the effect run here", actor, m.Key)
		return
	}
	now := o.started[actor].Add(p.skew) // when the Guard decided, as the store sees its clock
	evidence = slices.DeleteFunc(evidence, func(rc landedReceipt) bool { return o.expired(rc.expiresAt, now) })
	if len(evidence) == 0 {
		o.violatef("%s: duplicate of %s answered after its receipts expired", actor, m.Key)
		return
	}
	if !slices.ContainsFunc(evidence, func(rc landedReceipt) bool { return rc.variant == m.Variant }) {
		o.violatef("%s: duplicate of %s for payload v%d, but the receipt is for another payload", actor, m.Key, m.Variant)
	}
	if !slices.ContainsFunc(evidence, func(rc landedReceipt) bool {
		return bytes.Equal(rc.value, r.Value) || (r.Value == nil && (rc.omitted || rc.value == nil))
	}) {
		o.violatef("%s: duplicate of %s replays %q, which no receipt holds", actor, m.Key, r.Value)
	}
	// Answered from a receipt an operator wrote, it says so; from an
	// attempt's, it does not.
	byOperator := slices.ContainsFunc(evidence, func(rc landedReceipt) bool { return rc.operator })
	byAttempt := slices.ContainsFunc(evidence, func(rc landedReceipt) bool { return !rc.operator })
	switch {
	case r.Resolved && !byOperator:
		o.violatef("%s: duplicate of %s says an operator wrote its receipt, but none did", actor, m.Key)
	case !r.Resolved && !byAttempt:
		o.violatef("%s: duplicate of %s, answered from the receipt an operator wrote, does not say so (Resolved)", actor, m.Key)
	}
}

// dropped reports whether a result may have been dropped from its receipt:
// over the Guard's cap, or refused by a store whose items are made small.
func (o *oracle) dropped(value []byte) bool {
	c := o.w.cfg
	return (c.MaxResult > 0 && len(value) > c.MaxResult) || c.ItemLimit > 0
}

// deleted checks a message the mapping deleted: its effect ran, or is
// recorded, or a copy of it was requeued (that copy is checked in its
// turn: deleted, or dead-lettered by the end).
func (o *oracle) deleted(m *sqsMessage) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stats.Deleted++
	if m.NoKey {
		o.violatef("message %s deleted, though it has no key: nothing could run it", m.ID)
		return
	}
	if len(o.applied[m.Key]) > 0 || len(o.landed[o.skeyOf[m.Key]]) > 0 {
		return
	}
	if m.requeued {
		return
	}
	o.violatef("message %s (%s) deleted, but its effect neither ran nor is recorded", m.ID, m.Key)
}

// stuck: the schedule did not end by its horizon.
func (o *oracle) stuck(running int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.violatef("the schedule did not end by +%s: %d invocations running, messages left in the queue", o.w.horizon(), running)
}

// final runs the end-of-schedule checks and counts.
func (o *oracle) final() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.w.queue.mu.Lock()
	defer o.w.queue.mu.Unlock()
	for _, m := range o.w.queue.msgs {
		if m.requeued {
			o.stats.Requeued++
		}
		switch {
		case m.dlq:
			o.stats.DLQ++
			if len(o.applied[m.Key]) > 0 {
				o.stats.DLQApplied++
				switch last, ok := o.last[m.ID]; {
				case last == idem.InProgress:
					o.stats.DLQInProgress++
				case ok && (last == idem.Executed || last == idem.Rerun || last == idem.Duplicate || last == idem.Unconfirmed):
					o.stats.DLQDone++
				}
			}
		case !m.deleted:
			o.violatef("message %s (%s) neither deleted nor dead-lettered at the end", m.ID, m.Key)
		}
	}
	if o.w.cfg.Mode == "tx" {
		for key, ats := range o.applied {
			if n := o.w.store.ledger(key); n != len(ats) {
				o.violatef("ledger of %s says %d, the oracle saw %d commits", key, n, len(ats))
			}
		}
	}
}

func outcomeName(r sqsbatch.RecordResult) string {
	if r.Outcome == 0 {
		return "skipped"
	}
	return r.Outcome.String()
}

func (w *world) at(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return fmt.Sprintf("+%s", t.Sub(w.start).Round(time.Millisecond))
}
