package sim

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// The invariants of remote effects (Config.Remote, remote.go), and of the
// unknown outcomes of every lease-mode world:
//
//   - double applications on the remote system: none after a reconcile
//     that answered, under either policy; none at all under Hold; under
//     Retry, once reconcile could not tell or without one, only where the
//     attempt before left an unknown outcome after the remote applied (an
//     ambiguous error, a panic, or a lease that lapsed before its receipt:
//     a crash, a freeze, store faults), each classified by that window;
//     beyond the guarantee, under any policy, clock skew past the margin,
//     and retention ended — only where an attempt between the two took the
//     record as new, absent or expired at its now (remoteCause,
//     renewedBetween);
//   - what an acquire took over, as the store reports it (PrevStatus), is
//     the record's status, or none for a record expired at the acquire's
//     now: an UNKNOWN or lapsed IN_PROGRESS record past its retention is
//     neither reconciled nor held, and run as new (checkPrev);
//   - an effect never runs once its reconcile answered applied; after an
//     unknown outcome it runs only once reconciled (when there is a
//     reconcile), under Hold only when told not applied, and never with
//     its context ended — a reconcile that used the time up leaves the
//     call Failed, the effect not run, the record UNKNOWN (running,
//     checkRerun);
//   - a reconcile is asked only after an unknown outcome: never for a new
//     key, nor after a definite failure, nor for a record past its
//     retention (reconciled);
//   - a release is FAILED exactly when the effect failed definitely (a
//     refusal, or a request that never left, marked Definite), returned
//     before its context ended, and the attempt took over no outcome that
//     is still unknown (else UNKNOWN), and a definite failure leaves
//     nothing applied; a record is parked HELD only under Hold, after an
//     unknown outcome that could not be reconciled, without an expiry
//     (remoteTransition); a record reported held is HELD, and so is every
//     later copy of its key in the batch (checkHeld, checkUnit);
//   - a call reports Rerun exactly when it took over an unknown outcome
//     no reconcile settled and ran the effect again under Retry, receipt
//     written; never under Hold (checkRerun);
//   - a receipt is written only for a key the remote system applied
//     (landedReceipt);
//   - after the run, the HELD records listed are exactly the ones parked,
//     each still HELD without an expiry (listed); the operator resolves
//     each with the remote system's truth, and a delivery then runs each
//     not-done key exactly once and none of the done ones (world.settle).

// A reconcile's answers, as the oracle notes them.
const (
	answerApplied    = "applied"
	answerNotApplied = "not applied"
	answerCannotTell = "cannot tell"
)

// skewPastMargin is the double effect no policy closes: a zombie whose
// clock let another attempt take its lease while its effect could still
// run.
const skewPastMargin = "clock skew past the safety margin"

// unknownOutcome reports whether an attempt that took over a record of
// status s took over an unknown outcome: a lease that lapsed, or a release
// after an error that was not definite.
func unknownOutcome(s idem.Status) bool {
	return s == idem.StatusInProgress || s == idem.StatusUnknown
}

// remoteTransition notes what an attempt took over, and checks releases.
// o.mu is held.
func (o *oracle) remoteTransition(actor, token, skey string, before, after idem.Record, existed, exists bool) {
	if !exists {
		return
	}
	if after.Lease != before.Lease || !existed {
		return // a take: what it took over is noted by transition
	}
	at := o.attempts[token]
	if at == nil || before.Status != idem.StatusInProgress || before.Lease != token || after.Lease != token {
		return
	}
	// An attempt that took over an unknown outcome it did not learn was
	// not applied leaves it unknown, whatever its own call did.
	still := unknownOutcome(at.prev) && at.reconciled != answerNotApplied
	switch after.Status {
	case idem.StatusFailed:
		if at.ended != endedDefinite {
			o.violatef("%s: released %s FAILED after its effect ended %q, not a definite failure: the next attempt runs it without reconciling", actor, short(skey), at.ended)
		}
		if at.endedLate {
			o.violatef("%s: released %s FAILED after an error its effect returned once its context had ended, without proof that the request never left: it may be the deadline's, whatever it is marked", actor, short(skey))
		}
		if still {
			o.violatef("%s: released %s FAILED after a definite failure, though the outcome it took over (%s) is still unknown: the next attempt runs without reconciling", actor, short(skey), statusText(at.prev))
		}
		if !at.effectAt.IsZero() {
			o.violatef("%s: released %s FAILED, a definite failure, but its effect had applied on the remote system", actor, short(skey))
		}
	case idem.StatusUnknown:
		if at.ended == endedDefinite && !still && !at.endedLate {
			o.violatef("%s: released %s UNKNOWN after a definite failure: the next attempt reconciles (or holds) what never took place", actor, short(skey))
		}
	case idem.StatusHeld:
		o.stats.Held++
		o.held[skey] = token
		switch c := o.w.cfg; {
		case !c.Hold:
			o.violatef("%s: parked %s HELD under the Retry policy", actor, short(skey))
		case !unknownOutcome(at.prev):
			o.violatef("%s: parked %s HELD, though it took over %s, not an unknown outcome", actor, short(skey), statusText(at.prev))
		case c.Reconcile && at.reconciled != answerCannotTell:
			o.violatef("%s: parked %s HELD, though its reconcile answered %q", actor, short(skey), at.reconciled)
		case !after.ExpiresAt.IsZero():
			o.violatef("%s: parked %s HELD with an expiry (%s): TTL would delete it silently", actor, short(skey), o.w.at(after.ExpiresAt))
		}
	}
}

// running is told that the remote effect of actor's attempt is about to
// run, its context ended or not.
func (o *oracle) running(actor, token string, ctxEnded bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	at := o.attempts[token]
	if at == nil {
		return
	}
	c := o.w.cfg
	if ctxEnded && unknownOutcome(at.prev) {
		o.violatef("%s: took over an unknown outcome (%s), reconcile %q, and starts the effect with its context ended: it must not run (Failed, the record UNKNOWN)", actor, at.prev, at.reconciled)
	}
	switch {
	case at.reconciled == answerApplied:
		o.violatef("%s: runs the effect although its reconcile answered applied", actor)
	case !unknownOutcome(at.prev):
	case c.Reconcile && at.reconciled == "":
		o.violatef("%s: took over an unknown outcome (%s) and runs the effect without reconciling", actor, at.prev)
	case c.Hold && at.reconciled != answerNotApplied:
		o.violatef("%s: took over an unknown outcome (%s) it could not reconcile (%q), and runs the effect under Hold", actor, at.prev, at.reconciled)
	}
}

// effectEnded notes how the remote effect of the attempt holding token
// ended, and whether its context had ended by then.
func (o *oracle) effectEnded(token, how string, late bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if at := o.attempts[token]; at != nil {
		at.ended, at.endedLate = how, late
	}
}

// reconciled is told what actor's reconcile answered, and whether its
// context had ended by then.
func (o *oracle) reconciled(actor, token string, applied bool, result []byte, err error, late bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	at := o.attempts[token]
	if at == nil {
		return
	}
	at.reconciledAt, at.reconcileLate = time.Now(), late
	switch {
	case err != nil:
		at.reconciled = answerCannotTell
	case applied:
		at.reconciled, at.value = answerApplied, result
		o.reconciledBy[at.key] = append(o.reconciledBy[at.key], at)
	default:
		at.reconciled = answerNotApplied
	}
	o.w.logf(actor, "reconcile %s: %s %v", at.key, at.reconciled, errText(err))
	if !unknownOutcome(at.prev) {
		o.violatef("%s: asks its reconcile, though it took over %s, not an unknown outcome", actor, statusText(at.prev))
	}
}

// remoteCause classifies b's application of a key a had applied, or
// reports the violation and returns "". o.mu is held.
func (o *oracle) remoteCause(a, b *attempt) string {
	c := o.cause(a, b)
	bad := ""
	switch {
	case strings.HasSuffix(c, "(retention)") && o.renewedBetween(a, b):
		return c
	case b.reconciled == answerApplied:
		bad = "ran it again although its reconcile answered applied"
	case b.reconciled == answerNotApplied && a.effectAt.Before(b.reconciledAt):
		bad = fmt.Sprintf("its reconcile answered not applied at %s, after the first had applied it at %s", o.w.at(b.reconciledAt), o.w.at(a.effectAt))
	case c == skewPastMargin:
		return c
	case o.w.cfg.Hold:
		bad = fmt.Sprintf("under Hold (reconcile %q)", b.reconciled)
	case o.w.cfg.Reconcile && b.reconciled == "" && o.forgotten(a, b) == nil:
		bad = "ran it again without reconciling"
	case b.reconciled == answerNotApplied:
		bad = "the first applied it after the second's reconcile looked"
	}
	window := c
	switch a.ended {
	case endedAmbiguous:
		window = "an ambiguous error after the remote applied"
	case endedPanic:
		window = "a panic after the remote applied"
	}
	if bad == "" && window == "" {
		bad = "unexplained"
	}
	if bad != "" {
		o.violatef("double effect for %s: %s (lease %s, %s) and %s (lease %s, %s): %s",
			a.key, a.actor, o.lease(a.token), a.proc.name, b.actor, o.lease(b.token), b.proc.name, bad)
		return ""
	}
	how := "no reconcile"
	if o.w.cfg.Reconcile {
		how = "reconcile could not tell"
	}
	if o.w.cfg.Reconcile && b.reconciled == "" && o.forgotten(a, b) != nil {
		// A retry's own definite failure says nothing of the unknown
		// outcome before it: the record must stay UNKNOWN, and the next
		// attempt reconcile (it would have answered applied).
		o.violatef("%s: an unknown outcome forgotten: a retry's definite failure released FAILED, the next attempt ran without reconciling", b.actor)
		return fmt.Sprintf("unknown outcome retried (%s), its retry failed definitely, the next ran without reconciling: %s", how, window)
	}
	return fmt.Sprintf("unknown outcome retried (%s): %s", how, window)
}

// forgotten is the attempt between a and b (in the order they took the
// record) that took over an unknown outcome, could not reconcile it (or
// had no reconcile), ran the effect under Retry, and failed definitely:
// its release FAILED, b took a record that no longer said the outcome
// before was unknown. nil if none.
func (o *oracle) forgotten(a, b *attempt) *attempt {
	if b.prev != idem.StatusFailed {
		return nil
	}
	for _, x := range o.taken[a.skey] {
		if x.acquiredSeq > a.acquiredSeq && x.acquiredSeq < b.acquiredSeq && unknownOutcome(x.prev) &&
			x.reconciled != answerNotApplied && x.ended == endedDefinite {
			return x
		}
	}
	return nil
}

// checkPrev: an acquire that took the record reports what it took over
// (PrevStatus) as the record was: its status, or none when there was none
// or it had expired by the acquire's now (it counts as absent: neither
// reconciled nor held). o.mu is held.
func (o *oracle) checkPrev(actor string, a idem.Acquisition, rec idem.Record) {
	at := o.attempts[a.Lease]
	if at == nil || !at.prevSeen {
		return
	}
	at.told = true
	if rec.PrevStatus == at.prev {
		return
	}
	why := ""
	if at.renewed {
		why = ", expired at the acquire's now or absent: it counts as absent"
	}
	o.violatef("%s: its acquire of %s reports it took over %s, but it took over %s%s", actor, short(a.Key), statusText(rec.PrevStatus), statusText(at.prev), why)
}

// checkRerun: a call reports Rerun exactly when it took over an unknown
// outcome that no reconcile settled (there was none, or it could not tell)
// and ran the effect again under Retry with its receipt written; never
// under Hold. An Executed in its place is a window entered that nobody
// counts. o.mu is held.
func (o *oracle) checkRerun(actor string, r sqsbatch.RecordResult) {
	at := o.attempts[o.current[actor]]
	if at == nil || at.actor != actor {
		if r.Outcome == idem.Rerun {
			o.violatef("%s: reported rerun without an attempt of its own", actor)
		}
		return
	}
	unsettled := unknownOutcome(at.prev) && (at.reconciled == "" || at.reconciled == answerCannotTell)
	switch {
	case r.Outcome == idem.Rerun && o.w.cfg.Hold:
		o.violatef("%s: reported rerun under Hold", actor)
	case r.Outcome == idem.Rerun && !unsettled:
		o.violatef("%s: reported rerun, though it took over %s (reconcile %q): no unknown outcome was run again", actor, statusText(at.prev), at.reconciled)
	case r.Outcome == idem.Executed && unsettled:
		o.violatef("%s: took over an unknown outcome (%s) that no reconcile settled (%q), ran the effect again and reports executed: a rerun nobody counts", actor, at.prev, at.reconciled)
	case r.Outcome != idem.Failed && at.reconcileLate && (at.reconciled == answerNotApplied || (at.reconciled == answerCannotTell && !o.w.cfg.Hold)):
		o.violatef("%s: its reconcile answered %q once the effect's context had ended, and it reports %s: want failed, the effect not run", actor, at.reconciled, r.Outcome)
	case unsettled && !at.effectAt.IsZero() && (r.Outcome == idem.Unconfirmed || r.Outcome == idem.LeaseLost):
		// Rerun replaces Executed only: the window was entered, and no
		// outcome says so (counted, for the report).
		o.stats.Uncounted++
	}
}

// renewedBetween reports whether, after the first of a and b took the
// record, an attempt up to the second took it as new (none there, or
// expired at its now): a new retention period began, and the first's
// application no longer counts. o.mu is held.
func (o *oracle) renewedBetween(a, b *attempt) bool {
	from, to := min(a.acquiredSeq, b.acquiredSeq), max(a.acquiredSeq, b.acquiredSeq)
	for _, x := range o.taken[a.skey] {
		if x.acquiredSeq > from && x.acquiredSeq <= to && x.renewed {
			return true
		}
	}
	return false
}

// checkHeld: a record reported held is HELD. o.mu is held.
// An operator may have settled the record since the call began (its
// process frozen before it reported).
func (o *oracle) checkHeld(actor string, m Message) {
	skey := o.skeyOf[m.Key]
	if rs := o.resolutions[skey]; len(rs) > 0 && rs[len(rs)-1].landed.After(o.started[actor]) {
		return
	}
	if rec, ok := o.w.store.record(skey); !ok || rec.Status != idem.StatusHeld {
		o.violatef("%s: reported held, but its record is %s", actor, statusText(rec.Status))
	}
}

// listed checks the HELD records an operator lists after the run against
// the ones the oracle saw parked: each still HELD, by the attempt that
// parked it, without an expiry, and listed.
func (o *oracle) listed(held []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, skey := range held {
		if _, ok := o.held[skey]; !ok {
			o.violatef("HELD record %s listed, which no attempt parked", short(skey))
		}
	}
	for _, skey := range slices.Sorted(maps.Keys(o.held)) {
		rec, ok := o.w.store.record(skey)
		switch token := o.held[skey]; {
		case !ok:
			o.violatef("%s, parked HELD by lease %s, is gone at the end: deleted silently", short(skey), o.lease(token))
		case rec.Status != idem.StatusHeld || rec.Lease != token:
			o.violatef("%s, parked HELD by lease %s, is %s (lease %s) at the end", short(skey), o.lease(token), statusText(rec.Status), o.lease(rec.Lease))
		case !rec.ExpiresAt.IsZero():
			o.violatef("%s, parked HELD, expires at %s", short(skey), o.w.at(rec.ExpiresAt))
		case !slices.Contains(held, skey):
			o.violatef("%s, parked HELD, is not listed", short(skey))
		}
	}
}

// holder is the attempt that holds lease.
func (o *oracle) holder(lease string) *attempt {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.attempts[lease]
}

// applications is how often the effect of item took place.
func (o *oracle) applications(item string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.applied[item])
}
