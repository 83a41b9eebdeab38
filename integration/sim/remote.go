package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// Remote effects. In a world with Remote on, the lease-mode effect is a
// call to a remote system (an email, a payment). The system applies every
// call that reaches it, under the idempotency key passed downstream (the
// lease's Key), and does not deduplicate: two applications of a key are a
// double effect. A call may be refused (nothing applied: the effect returns
// idem.Definite), applied with its reply lost (an ambiguous error), slow
// past the effect's context (applied, or never: the context's error), or
// the effect may panic after it applied; the process may crash or freeze
// before or after it, as at any point. An ambiguous error is sometimes
// marked Definite all the same, as a careless client does: a lost reply or
// a timeout is never definite, and the Guard must see through the mark.
//
// The reconcile (sqsbatch.WithReconcile) asks the system whether the key
// was applied, and answers truthfully with the result the call returned —
// or cannot tell (an error, a panic), or is slow past its context. A
// remote application happens at once, inside the effect's context: one
// that lands after the reconcile looked (a request delivered late) is not
// modelled, no reconcile could see it.

// remote is the remote system of a schedule.
type remote struct {
	mu      sync.Mutex
	applied map[string][][]byte // by key: the result of each application
}

func newRemote() *remote { return &remote{applied: map[string][][]byte{}} }

func (r *remote) apply(key string, result []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.applied[key] = append(r.applied[key], result)
}

// lookup is what the system knows of key: applied, with the result of its
// first application.
func (r *remote) lookup(key string) (applied bool, result []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if a := r.applied[key]; len(a) > 0 {
		return true, a[0]
	}
	return false, nil
}

// The errors of the remote system.
var (
	errRefused    = errors.New("sim: the remote system refused the call")
	errCannotTell = errors.New("sim: the remote system cannot tell")
)

// How a remote effect ended, for the oracle.
const (
	endedOK        = "ok"
	endedDefinite  = "definite"  // refused: nothing applied
	endedAmbiguous = "ambiguous" // an error that does not say: applied or not
	endedPanic     = "panic"
)

// drawRemote makes half of the lease-mode worlds (crowded ones aside) worlds
// of remote effects, each with one of the four policies (reconcile or not,
// Retry or Hold), from a generator of its own.
func drawRemote(c *Config, r *rand.Rand) {
	if c.Mode != "lease" || c.Crowd || r.IntN(2) != 0 {
		return
	}
	c.Remote, c.Reconcile, c.Hold = true, r.IntN(2) == 0, r.IntN(2) == 0
	c.PRemote = 0.05 + 0.25*r.Float64()
	if c.Reconcile {
		c.PReconcileErr = pick(r, 0.0, 0.3, 0.6) * r.Float64()
	}
}

func (c Config) policy() string {
	p := "retry"
	if c.Hold {
		p = "hold"
	}
	if c.Reconcile {
		return fmt.Sprintf("%s with reconcile (cannot tell %.2f)", p, c.PReconcileErr)
	}
	return p + " without reconcile"
}

// decideRemote draws the fault of a remote call.
func (w *world) decideRemote(v verdict) verdict {
	p := w.cfg.PRemote
	switch x := w.rng.Float64(); {
	case x < p*0.3:
		v.fault = faultRefuse
	case x < p*0.6:
		v.fault, v.marked = faultLost, w.rng.IntN(3) == 0
	case x < p*0.85:
		v.fault, v.never, v.marked = faultSlow, w.rng.IntN(3) == 0, w.rng.IntN(3) == 0
	case x < p:
		v.fault = faultPanicAfter
	}
	return v
}

// remoteEffect is the lease-mode effect of a world of remote effects.
func (p *process) remoteEffect(ctx context.Context) ([]byte, error) {
	actor, o := p.w.actorOf(ctx), p.w.check
	lease, _ := idem.LeaseFromContext(ctx)
	o.running(actor, lease.Token)
	v, dead := p.at(actor, kindEffect)
	ended := func(how string, value []byte, err error) ([]byte, error) {
		o.effectEnded(lease.Token, how)
		return value, err
	}
	switch {
	case dead:
		return nil, errDead
	case o.message(actor).Key == p.w.cfg.Poison:
		return ended(endedDefinite, nil, idem.Definite(fmt.Errorf("%w: poison", errRefused)))
	case v.fault == faultRefuse:
		p.w.logf(actor, "the remote system refuses the call")
		return ended(endedDefinite, nil, idem.Definite(errRefused))
	case v.fault == faultEffect:
		return ended(endedAmbiguous, nil, errEffect) // it never reached the system, for all the effect can tell
	case v.fault == faultPanic:
		o.effectEnded(lease.Token, endedPanic)
		panic("sim: the effect panics")
	case v.fault == faultSlow && v.never:
		p.w.logf(actor, "the remote call hangs, never applied")
		<-ctx.Done()
		return ended(endedAmbiguous, nil, marked(v, ctx.Err()))
	}
	if err := ctx.Err(); err != nil {
		return ended(endedAmbiguous, nil, err)
	}
	value := o.effect(p, actor, lease.Token)
	p.w.remote.apply(lease.Key, value)
	if p.crashAfter(v, "the remote call applied") {
		return nil, errDead
	}
	switch v.fault {
	case faultLost:
		p.w.logf(actor, "the remote call's reply is lost")
		return ended(endedAmbiguous, nil, marked(v, fmt.Errorf("sim: the remote call: %w", io.ErrUnexpectedEOF)))
	case faultSlow:
		p.w.logf(actor, "the remote call's reply is slow past the effect's context")
		<-ctx.Done()
		return ended(endedAmbiguous, nil, marked(v, ctx.Err()))
	case faultPanicAfter:
		o.effectEnded(lease.Token, endedPanic)
		panic("sim: the effect panics after the remote call applied")
	}
	return ended(endedOK, value, nil)
}

// marked is err, marked Definite when v says the client marks it so.
func marked(v verdict, err error) error {
	if v.marked {
		return idem.Definite(err)
	}
	return err
}

// reconcile is the handler's reconcile: it asks the remote system about
// the key.
func (p *process) reconcile(ctx context.Context, key string, _ events.SQSMessage) (bool, []byte, error) {
	actor := p.w.actorOf(ctx)
	lease, _ := idem.LeaseFromContext(ctx)
	v, dead := p.at(actor, kindReconcile)
	answer := func(applied bool, result []byte, err error) (bool, []byte, error) {
		p.w.check.reconciled(actor, lease.Token, applied, result, err)
		return applied, result, err
	}
	switch {
	case dead:
		return answer(false, nil, errDead)
	case v.fault == faultRefuse:
		return answer(false, nil, errCannotTell)
	case v.fault == faultSlow:
		<-ctx.Done()
		return answer(false, nil, ctx.Err())
	case v.fault == faultPanic:
		_, _, _ = answer(false, nil, errors.New("sim: the reconcile panics"))
		panic("sim: the reconcile panics")
	}
	if err := ctx.Err(); err != nil {
		return answer(false, nil, err)
	}
	applied, result := p.w.remote.lookup(key)
	a, r, err := answer(applied, result, nil)
	p.crashAfter(v, "the reconcile")
	return a, r, err
}

// settle is the operator, after the run: the HELD records are listed (as
// idemctl list does), each key looked up at the remote system and resolved
// as idemctl resolve does — done: a receipt under a new lease; not done:
// released FAILED — and then delivered once more, with nothing going wrong:
// a done key is a duplicate, a not-done one runs exactly once (a poison
// key is refused again).
func (w *world) settle() {
	w.calm.Store(true)
	held := w.store.held()
	w.check.listed(held)
	var p *process
	for i, skey := range held {
		rec, _ := w.store.record(skey)
		at := w.check.holder(rec.Lease)
		if at == nil {
			w.check.violation("HELD record %s under lease %s, which no attempt held", short(skey), w.check.lease(rec.Lease))
			continue
		}
		done, _ := w.remote.lookup(at.key)
		to, lease := idem.StatusFailed, rec.Lease
		if done {
			to, lease = idem.StatusCompleted, fmt.Sprintf("idemctl-%d", i)
		}
		expires := w.start.Add(w.since() + w.cfg.Retention)
		w.logf("operator", "resolves %s (%s): %s", short(skey), at.key, to)
		if err := w.store.settle(skey, rec, to, lease, expires); err != nil {
			w.check.violation("operator: resolving %s (%s) failed: %v", short(skey), at.key, err)
			continue
		}
		w.check.settled(skey, at, done, lease, expires)
		if p == nil {
			p = w.newProcess(0, 0)
		}
		w.redeliver(p, at, done)
	}
}

// redeliver delivers the key of at (which parked it) once more, in p, and
// checks what it did: a done key is a duplicate, a not-done one runs
// exactly once.
func (w *world) redeliver(p *process, at *attempt, done bool) {
	m := w.check.message(at.actor)
	actor := "operator/" + m.ID
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.Timeout)
	defer cancel()
	ctx = context.WithValue(context.WithValue(ctx, actorKey{}, actor), procKey{}, p)
	msg := events.SQSMessage{MessageId: m.ID, ReceiptHandle: actor, Body: fmt.Sprintf("%s:v%d", m.Key, m.Variant)}
	var opts []idem.CallOption
	if w.cfg.Reconcile {
		opts = append(opts, idem.Reconcile(func(ctx context.Context) (bool, []byte, error) { return p.reconcile(ctx, m.Key, msg) }))
	}
	before := w.check.applications(m.Key)
	res, err := p.guard.Do(ctx, m.Key, []byte(msg.Body), func(ctx context.Context) ([]byte, error) {
		return p.effect(ctx, m.Key, msg)
	}, opts...)
	after := w.check.applications(m.Key)
	w.logf(actor, "→ %s %v", res.Outcome, errText(err))
	switch {
	case m.Key == w.cfg.Poison && !done && (res.Outcome != idem.Failed || after != 0):
		w.check.violation("%s (poison): resolved not done, delivered again: %s (%v), %d effects: want it refused", m.Key, res.Outcome, err, after)
	case m.Key == w.cfg.Poison && !done:
	case done && (res.Outcome != idem.Duplicate || after != before):
		w.check.violation("%s: resolved done, delivered again: %s (%v), %d effects more", m.Key, res.Outcome, err, after-before)
	case !done && (res.Outcome != idem.Executed || before != 0 || after != 1):
		w.check.violation("%s: resolved not done, delivered again: %s (%v), effects %d then %d: want it applied exactly once", m.Key, res.Outcome, err, before, after)
	}
}
