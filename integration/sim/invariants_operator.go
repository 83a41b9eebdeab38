package sim

import (
	"maps"
	"slices"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// The invariants of an operator's resolve (operator.go), through the
// store's own Resolve:
//
//   - it writes only over the record as the operator read it: not over one
//     a late request changed since, nor over another operator's write of
//     the same moment (operatorWrote);
//   - done is a receipt under a lease of the operator's own, flagged
//     Resolved; not done is FAILED under the held lease; either gets an
//     expiry, so that nothing settled stays for ever (operatorWrote);
//   - it reports what it did: written when its write (or an earlier
//     request's, whose reply was lost) landed, changed when it did not, and
//     the record as it is (resolved);
//   - a copy answered from the operator's receipt says so (Resolved, in
//     recorded); after the resolution no key is applied twice (the double
//     effects, as everywhere under Hold), and the key delivered once more
//     is a duplicate (done) or runs exactly once (not done) (redeliver).

// resolution is an operator's write that landed.
type resolution struct {
	actor         string
	at            *attempt // the attempt that parked the record
	before, after idem.Record
	landed        time.Time // when it landed
	done          bool
	redriven      bool
}

// itemOf is the item whose records skey keys.
func (o *oracle) itemOf(skey string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	for item, s := range o.skeyOf {
		if s == skey {
			return item
		}
	}
	return ""
}

// resolvedLive reports whether an operator tried to resolve skey during
// the run (once a key: what it leaves, settle takes).
func (o *oracle) resolvedLive(skey string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.tried[skey]
}

// resolving notes the record actor read before its Resolve of skey, and
// the expiry it gives.
func (o *oracle) resolving(actor, skey string, old idem.Record, expires time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.tried[skey] = true
	o.reading[actor+"\x00"+skey] = reading{old: old, expires: expires, since: len(o.resolutions[skey])}
}

// reading is what an operator read before its Resolve, the expiry it
// gives, and how many resolutions of the key had landed then.
type reading struct {
	old     idem.Record
	expires time.Time
	since   int
}

// sameRecord reports whether a and b are the same record as Resolve's
// condition compares them.
func sameRecord(a, b idem.Record) bool {
	return a.Lease == b.Lease && a.Status == b.Status && a.Attempts == b.Attempts && a.UpdatedAt.UnixMilli() == b.UpdatedAt.UnixMilli()
}

// operatorWrote checks an operator's write that landed on skey. o.mu is
// held.
func (o *oracle) operatorWrote(actor, skey string, before, after idem.Record, existed, exists bool) {
	if existed == exists && (!exists || (sameRecord(before, after) && before.ExpiresAt.Equal(after.ExpiresAt))) {
		return // a read, or a write that found nothing to write
	}
	rd, ok := o.reading[actor+"\x00"+skey]
	switch {
	case !ok:
		o.violatef("%s: writes %s, which it is not resolving", actor, short(skey))
		return
	case existed && !exists && !rd.expires.After(time.Now()):
		// Its expiry passed before it landed (the operator paused between
		// its clock and its write, longer than the retention): the
		// record is gone at once, settled as absent.
		o.resolutions[skey] = append(o.resolutions[skey], resolution{actor: actor, at: o.attempts[before.Lease], before: before, landed: time.Now()})
		delete(o.held, skey)
		o.w.logf(actor, "resolve of %s lands past the expiry it gives: the record is gone", short(skey))
		return
	case !existed || !exists:
		o.violatef("%s: its resolve of %s created or deleted the record", actor, short(skey))
		return
	case !sameRecord(before, rd.old):
		o.violatef("%s: its resolve wrote over %s, changed since it read it (%s lease %s, attempts %d, updated %s; now %s lease %s, attempts %d, updated %s)",
			actor, short(skey), rd.old.Status, o.lease(rd.old.Lease), rd.old.Attempts, o.w.at(rd.old.UpdatedAt),
			before.Status, o.lease(before.Lease), before.Attempts, o.w.at(before.UpdatedAt))
	}
	switch after.Status {
	case idem.StatusCompleted:
		if after.Lease == before.Lease {
			o.violatef("%s: resolved %s done under the held lease %s: that attempt's late release could undo it", actor, short(skey), o.lease(after.Lease))
		}
	case idem.StatusFailed:
		if after.Lease != before.Lease {
			o.violatef("%s: resolved %s not done under a new lease %s", actor, short(skey), o.lease(after.Lease))
		}
	default:
		o.violatef("%s: resolved %s to %s", actor, short(skey), statusText(after.Status))
		return
	}
	if after.ExpiresAt.IsZero() {
		o.violatef("%s: resolved %s without an expiry: it stays for ever", actor, short(skey))
	}
	done := after.Status == idem.StatusCompleted
	holder := o.attempts[before.Lease]
	o.resolutions[skey] = append(o.resolutions[skey], resolution{actor: actor, at: holder, before: before, after: after, landed: time.Now(), done: done})
	delete(o.held, skey)
	switch {
	case done:
		o.stats.SettledDone++
		variant := 0
		if holder != nil {
			variant = holder.variant
		}
		o.landed[skey] = append(o.landed[skey], landedReceipt{token: after.Lease, variant: variant, expiresAt: after.ExpiresAt,
			at: time.Now(), omitted: true, operator: true})
	default:
		o.stats.SettledNotDone++
	}
	if !o.w.calm.Load() {
		o.stats.SettledLive++
	}
	o.w.logf(actor, "resolve of %s lands: %s, lease %s", short(skey), after.Status, o.lease(after.Lease))
}

// resolved checks what actor's Resolve of skey (from old to to) reported.
func (o *oracle) resolved(actor, skey string, old idem.Record, to idem.Status, rec idem.Record, changed bool, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	rd := o.reading[actor+"\x00"+skey]
	mine := false
	for _, r := range o.resolutions[skey][rd.since:] {
		mine = mine || r.actor == actor
	}
	o.w.logf(actor, "resolve %s: changed %v, %s lease %s: %v", short(skey), changed, statusText(rec.Status), o.lease(rec.Lease), errText(err))
	switch {
	case err != nil:
	case !changed && !mine:
		o.violatef("%s: Resolve reports it wrote %s (%s), but nothing of its landed", actor, short(skey), to)
	case changed && mine:
		o.violatef("%s: Resolve reports %s changed, but the write that changed it is its own (one whose reply was lost)", actor, short(skey))
	case !changed && (rec.Status != to || (to == idem.StatusCompleted && !rec.Resolved)) && rd.expires.After(time.Now()):
		o.violatef("%s: Resolve of %s returns %s (resolved %v), not the receipt it wrote (%s)", actor, short(skey), statusText(rec.Status), rec.Resolved, to)
	case changed:
		if cur, ok := o.w.store.record(skey); ok && sameRecord(cur, old) {
			o.violatef("%s: Resolve reports %s changed, but it is as the operator read it", actor, short(skey))
		}
	}
}

// redriven notes that the dead letters of skey went back to the queue
// after its last resolution.
func (o *oracle) redriven(skey string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if rs := o.resolutions[skey]; len(rs) > 0 {
		rs[len(rs)-1].redriven = true
	}
}

// unredriven lists the keys resolved during the run whose dead letters
// were not redriven (the queue was done first, or the Resolve's answer was
// lost), and whose record is still the resolution, retained: settle
// delivers each once more.
func (o *oracle) unredriven() []resolution {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []resolution
	for _, skey := range slices.Sorted(maps.Keys(o.resolutions)) {
		rs := o.resolutions[skey]
		r := rs[len(rs)-1]
		cur, ok := o.w.store.record(skey)
		if r.redriven || r.at == nil || !ok || !sameRecord(cur, r.after) || o.expired(cur.ExpiresAt, time.Now()) {
			continue
		}
		out = append(out, r)
	}
	return out
}
