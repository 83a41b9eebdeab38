package sim

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// The invariants of remote effects (Config.Remote, remote.go):
//
//   - double applications on the remote system: none after a reconcile
//     that answered, under either policy; none at all under Hold; under
//     Retry, once reconcile could not tell or without one, only where the
//     attempt before left an unknown outcome after the remote applied (an
//     ambiguous error, a panic, or a lease that lapsed before its receipt:
//     a crash, a freeze, store faults), each classified by that window;
//     beyond the guarantee, under any policy, retention ended and clock
//     skew past the margin, as in every lease-mode world (remoteCause);
//   - an effect never runs once its reconcile answered applied; after an
//     unknown outcome it runs only once reconciled (when there is a
//     reconcile) and, under Hold, only when told not applied (running);
//   - a reconcile is asked only after an unknown outcome: never for a new
//     key, nor after a definite failure (reconciled);
//   - a release is FAILED exactly when the effect failed definitely and the
//     attempt took over no outcome that is still unknown (else UNKNOWN),
//     and a definite failure leaves nothing applied; a record is parked HELD only
//     under Hold, after an unknown outcome that could not be reconciled,
//     without an expiry (remoteTransition); a record reported held is HELD
//     (checkHeld);
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
		if at := o.attempts[after.Lease]; at != nil && at.acquiredSeq == 0 && existed {
			at.prev = before.Status
		}
		return
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
		if still {
			o.violatef("%s: released %s FAILED after a definite failure, though the outcome it took over (%s) is still unknown: the next attempt runs without reconciling", actor, short(skey), statusText(at.prev))
		}
		if !at.effectAt.IsZero() {
			o.violatef("%s: released %s FAILED, a definite failure, but its effect had applied on the remote system", actor, short(skey))
		}
	case idem.StatusUnknown:
		if at.ended == endedDefinite && !still {
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
// run.
func (o *oracle) running(actor, token string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	at := o.attempts[token]
	if at == nil {
		return
	}
	c := o.w.cfg
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
// ended.
func (o *oracle) effectEnded(token, how string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if at := o.attempts[token]; at != nil {
		at.ended = how
	}
}

// reconciled is told what actor's reconcile answered.
func (o *oracle) reconciled(actor, token string, applied bool, result []byte, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	at := o.attempts[token]
	if at == nil {
		return
	}
	at.reconciledAt = time.Now()
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
	case strings.HasSuffix(c, "(retention)"):
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

// checkHeld: a record reported held is HELD. o.mu is held.
func (o *oracle) checkHeld(actor string, m Message) {
	if rec, ok := o.w.store.record(o.skeyOf[m.Key]); !ok || rec.Status != idem.StatusHeld {
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

// settled notes what the operator wrote for skey, parked by at: a receipt
// under lease (done), or a release.
func (o *oracle) settled(skey string, at *attempt, done bool, lease string, expires time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !done {
		o.stats.SettledNotDone++
		return
	}
	o.stats.SettledDone++
	o.landed[skey] = append(o.landed[skey], landedReceipt{token: lease, variant: at.variant, expiresAt: expires, at: time.Now()})
}

// applications is how often the effect of item took place.
func (o *oracle) applications(item string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.applied[item])
}
