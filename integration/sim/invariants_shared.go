package sim

import (
	"context"
	"slices"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// The invariants of a process that runs several invocations at once
// (instances.go), beside every other, which hold there unchanged:
//
//   - a receipt the process owes (an effect it ran whose receipt the store
//     refused: Unconfirmed) is written by the next copy of the key the
//     process runs, whichever invocation it is in: a copy that starts once
//     the receipt is owed never acquires the key while the record still
//     holds the lease the effect ran under and the owed receipt has not
//     expired, so it never runs the effect again (checkOwed). A copy that
//     had already looked when the receipt became owed is another attempt,
//     as one in another process is: a double between them is explained or
//     reported like any (cause);
//   - copies of a key in two invocations of one process meet each other's
//     lease in progress, as two processes do (counted, MetSibling), and
//     never both run the effect unless a cause explains it; a copy is
//     still never told in progress by a lease of its own batch;
//   - every call of a record runs under its own invocation's context: its
//     batch, and a deadline no later than that invocation's
//     (checkContext).

// owedBy notes that p owes the receipt of at, whose call (or a copy's,
// writing at's owed receipt) ended Unconfirmed. o.mu is held.
func (o *oracle) owedBy(p *process, at *attempt) {
	if p == nil || at == nil {
		return
	}
	if o.owed[p] == nil {
		o.owed[p] = map[string][]*attempt{}
	}
	if !slices.Contains(o.owed[p][at.skey], at) {
		o.owed[p][at.skey] = append(o.owed[p][at.skey], at)
	}
}

// owedHere is the attempt whose receipt p owes for skey at now (the
// caller's clock, as the store sees it), nil if none: it ended
// Unconfirmed, the record is still in progress under its lease (no receipt
// landed, no other attempt took it: a write of the receipt would land),
// and the owed receipt is not past its expiry (and the second the Guard
// keeps it beyond, receipt.expires). Of all p ever owed for skey, only
// the attempt holding the record can be it. Once a receipt landed, an
// acquire only meets it: the Guard forgets what it owed when a copy wrote
// it, and a copy that starts then finds the receipt in the store. o.mu is
// held.
func (o *oracle) owedHere(p *process, skey string, now time.Time) *attempt {
	if len(o.owed[p][skey]) == 0 {
		return nil
	}
	rec, ok := o.w.store.record(skey)
	if !ok || rec.Status != idem.StatusInProgress {
		return nil
	}
	for _, e := range o.owed[p][skey] {
		if rec.Lease == e.token && now.Before(e.expiresAt.Add(time.Second)) {
			return e
		}
	}
	return nil
}

// checkOwed: an acquire of actor, in p, at a (its Guard looked for an owed
// receipt just before: no point lies between). o.mu is held.
func (o *oracle) checkOwed(actor string, p *process, a idem.Acquisition, m Message) {
	e := o.owedHere(p, a.Key, a.Now)
	if e == nil || e.variant != m.Variant {
		return // nothing owed, or another payload: a mismatch, not a copy
	}
	o.violatef("%s: acquires %s while %s owes the receipt of %s (lease %s, unconfirmed): the copy must write it, never run the effect again",
		actor, m.Key, p.name, e.actor, o.lease(e.token))
}

// metSibling counts an acquire of at that met the live lease of h, another
// invocation's attempt in the same process. o.mu is held.
func (o *oracle) metSibling(at, h *attempt) {
	if at != nil && h != nil && at.proc == h.proc && invocation(at.actor) != invocation(h.actor) {
		o.stats.MetSibling++
	}
}

// owedAcross counts a receipt of at written by writer, a copy of its key
// in another invocation (only at's Guard knows its token: the same
// process). o.mu is held.
func (o *oracle) owedAcross(writer string, at *attempt) {
	if writer != at.actor && invocation(writer) != invocation(at.actor) {
		o.stats.OwedAcross++
	}
}

// checkContext: actor's call runs under the context of its own
// invocation, ending no later than it. o.mu is held.
func (o *oracle) checkContext(ctx context.Context, actor string) {
	b := batchOf(ctx)
	if b == nil || isOperator(actor) {
		return
	}
	if b.inv != invocation(actor) {
		o.violatef("%s: runs under the context of %s, another invocation", actor, b.inv)
		return
	}
	if d, ok := ctx.Deadline(); !ok || d.After(b.deadline) {
		o.violatef("%s: runs with deadline %s, past its invocation's %s", actor, o.w.at(d), o.w.at(b.deadline))
	}
}
