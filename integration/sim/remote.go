package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// Remote effects. In a world with Remote on, the lease-mode effect is a
// call to a remote system (an email, a payment). The system applies every
// call that reaches it, under the idempotency key passed downstream (the
// lease's Key), and does not deduplicate: two applications of a key are a
// double effect. A call may be refused (a 4xx: nothing applied, the effect
// returns idem.Definite); never leave (a refused dial, a name that does not
// resolve: nothing applied, idem.NotSent); break after the connection was
// made (closed, aborted, reset, its reply cut short: applied, or not); be
// slow past the effect's context (applied, or never: an error once the
// context ended, its cause included) or past the call's own deadline given
// a cause (net/http's *url.Error around the cause alone); or the effect may
// panic after it applied; the process may crash or freeze before or after
// it, as at any point. Each failure of the transport comes in the shapes
// clients give it (bare, *url.Error, the AWS SDK's; remote_errors.go), and
// is sometimes marked Definite all the same, by a careless client, or by a
// careful one where idem.NotSent says it never left: only a request that
// never left is definite, and the Guard must see through every other mark,
// and any mark on an error returned once the effect's context had ended.
//
// The reconcile (sqsbatch.WithReconcile) asks the system whether the key
// was applied, and answers truthfully with the result the call returned —
// or cannot tell (its own error, a failure of the transport of any kind,
// sometimes marked Definite, a panic), or is slow past its context: it
// fails then, or answers truthfully once its context has ended (the lease
// used up: the effect must not start). A remote application happens at
// once, inside the effect's context: one that lands after the reconcile
// looked (a request delivered late) is not modelled, no reconcile could
// see it.
//
// A quarter of these worlds aim copies at the end of a key's retention
// (lapse): an unknown outcome taken past its expiry counts as absent.

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
	if !c.KeyByID && r.IntN(4) == 0 {
		lapse(c, r)
	}
}

// lapse makes c a world of copies aimed at the end of a key's retention: a
// first delivery whose outcome is often unknown (the remote faults are
// frequent), then copies sent around the moment its record expires — a
// little before it (a process whose clock runs ahead sees it expired while
// the server still keeps it), at it, or after it (kept until TTL deletes
// it) — and before the first message comes back. A record taken past its
// expiry counts as absent, whatever it says: the store reports nothing
// taken over, the attempt neither reconciles nor holds, and a second
// application is the retention's bound, no window.
func lapse(c *Config, r *rand.Rand) {
	c.Lapse, c.Visibility, c.Poison = true, false, ""
	c.PRemote = 0.3 + 0.5*r.Float64()
	c.Retention = time.Duration(2+r.IntN(3))*c.Timeout + time.Duration(r.IntN(1000))*time.Millisecond
	c.Messages = []Message{{ID: "m0", Key: "k0"}}
	for i := range 1 + r.IntN(3) {
		d := time.Duration(r.Int64N(int64(4*c.Margin+2*time.Second))) - 2*c.Margin
		c.Messages = append(c.Messages, Message{ID: fmt.Sprintf("m%d", i+1), Key: "k0", SentAt: c.Retention + d})
	}
	for i := range c.Messages {
		if c.FIFO {
			c.Messages[i].Group = fmt.Sprintf("g%d", r.IntN(2))
		}
	}
	for i := range c.Skews {
		if r.IntN(3) != 0 {
			c.Skews[i] = time.Duration(r.Int64N(int64(2 * c.Margin)))
		}
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
	case x < p*0.2:
		v.fault = faultRefuse
	case x < p*0.45:
		v.fault, v.never, v.marked = faultLost, w.rng.IntN(3) == 0, w.rng.IntN(3) == 0
	case x < p*0.6:
		v.fault, v.marked = faultNotSent, w.rng.IntN(2) == 0
	case x < p*0.75:
		v.fault, v.never, v.marked = faultOwnDeadline, w.rng.IntN(2) == 0, w.rng.IntN(2) == 0
		// A few odd nanoseconds: never at the very instant the effect's
		// own context ends (which timer fires first is Go's choice).
		v.delay = pick(w.rng, 50*time.Millisecond, 200*time.Millisecond, w.cfg.Margin/2, w.cfg.Timeout/4) + 3
	case x < p*0.9:
		v.fault, v.never, v.marked = faultSlow, w.rng.IntN(3) == 0, w.rng.IntN(3) == 0
	case x < p:
		v.fault = faultPanicAfter
	}
	if v.fault != faultNone {
		v.careful, v.variant = w.rng.IntN(2) == 0, w.rng.IntN(1<<12)
	}
	return v
}

// decideReconcile draws the fault of a reconcile.
func (w *world) decideReconcile(v verdict) verdict {
	p := w.cfg.PReconcileErr
	switch x := w.rng.Float64(); {
	case x < p*0.5:
		v.fault, v.marked, v.variant = faultRefuse, w.rng.IntN(3) == 0, w.rng.IntN(1<<12) // it cannot tell: an error
	case x < p*0.7:
		v.fault, v.never, v.variant = faultSlow, true, w.rng.IntN(1<<12) // past its context: its error
	case x < p*0.9:
		v.fault = faultSlow // it answers, truthfully, once its context has ended
	case x < p:
		v.fault = faultPanic
	}
	return v
}

// remoteEffect is the lease-mode effect of a world of remote effects.
func (p *process) remoteEffect(ctx context.Context) ([]byte, error) {
	actor, o := p.w.actorOf(ctx), p.w.check
	lease, _ := idem.LeaseFromContext(ctx)
	o.running(actor, lease.Token, ctx.Err() != nil)
	v, dead := p.at(actor, kindEffect)
	ended := func(how string, value []byte, err error) ([]byte, error) {
		// Late: returned once its context had ended, without the proof
		// (idem.NotSent) that the request never left.
		o.effectEnded(lease.Token, how, ctx.Err() != nil && !idem.NotSent(err))
		return value, err
	}
	// fails ends the call with a failure of the transport, marked Definite
	// by a careless client or, where idem.NotSent says the request never
	// left, by a careful one: definite only if marked, and if it never
	// left indeed.
	fails := func(err error, notSent bool) ([]byte, error) {
		p.w.logf(actor, "the remote call fails: %v", err)
		if !v.marked && !(v.careful && idem.NotSent(err)) {
			return ended(endedAmbiguous, nil, err)
		}
		err = mark(err, v.variant)
		if notSent {
			return ended(endedDefinite, nil, err)
		}
		return ended(endedAmbiguous, nil, err)
	}
	broke := func() error { return brokenError(broken(v.variant%int(nBroken)), v.variant/int(nBroken)) }
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
		o.effectEnded(lease.Token, endedPanic, false)
		panic("sim: the effect panics")
	case v.fault == faultNotSent:
		return fails(notSentError(v.variant), true)
	case v.fault == faultLost && v.never:
		p.w.logf(actor, "the connection breaks before the remote system takes the call")
		return fails(broke(), false)
	case v.fault == faultSlow && v.never:
		p.w.logf(actor, "the remote call hangs, never applied")
		<-ctx.Done()
		return fails(endedError(ctx, v.variant), false)
	case v.fault == faultOwnDeadline && v.never:
		p.w.logf(actor, "the remote call hangs past its own deadline, never applied")
		return fails(ownDeadline(ctx, v.delay), false)
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
		p.w.logf(actor, "the remote call's reply is lost (%s)", brokenNames[v.variant%int(nBroken)])
		return fails(broke(), false)
	case faultSlow:
		p.w.logf(actor, "the remote call's reply is slow past the effect's context")
		<-ctx.Done()
		return fails(endedError(ctx, v.variant), false)
	case faultOwnDeadline:
		p.w.logf(actor, "the remote call's reply is slow past its own deadline (%s)", v.delay)
		return fails(ownDeadline(ctx, v.delay), false)
	case faultPanicAfter:
		o.effectEnded(lease.Token, endedPanic, false)
		panic("sim: the effect panics after the remote call applied")
	}
	return ended(endedOK, value, nil)
}

// ownDeadline is a remote call whose reply does not come: it waits for its
// own deadline, given a cause (context.WithTimeoutCause), and fails as
// net/http fails it, with the cause alone in an *url.Error. When the
// effect's context ends first, the cause is that context's.
func ownDeadline(ctx context.Context, d time.Duration) error {
	cctx, cancel := context.WithTimeoutCause(ctx, d, errCallDeadline)
	defer cancel()
	<-cctx.Done()
	return &url.Error{Op: "Post", URL: remoteURL, Err: context.Cause(cctx)}
}

// reconcile is the handler's reconcile: it asks the remote system about
// the key.
func (p *process) reconcile(ctx context.Context, key string, _ events.SQSMessage) (bool, []byte, error) {
	actor := p.w.actorOf(ctx)
	lease, _ := idem.LeaseFromContext(ctx)
	v, dead := p.at(actor, kindReconcile)
	answer := func(applied bool, result []byte, err error) (bool, []byte, error) {
		p.w.check.reconciled(actor, lease.Token, applied, result, err, ctx.Err() != nil)
		return applied, result, err
	}
	switch {
	case dead:
		return answer(false, nil, errDead)
	case v.fault == faultRefuse:
		return answer(false, nil, cannotTell(v))
	case v.fault == faultSlow && v.never:
		<-ctx.Done()
		return answer(false, nil, endedError(ctx, v.variant))
	case v.fault == faultSlow:
		p.w.logf(actor, "the reconcile answers once its context has ended")
		<-ctx.Done()
	case v.fault == faultPanic:
		_, _, _ = answer(false, nil, errors.New("sim: the reconcile panics"))
		panic("sim: the reconcile panics")
	default:
		if err := ctx.Err(); err != nil {
			return answer(false, nil, err)
		}
	}
	applied, result := p.w.remote.lookup(key)
	a, r, err := answer(applied, result, nil)
	p.crashAfter(v, "the reconcile")
	return a, r, err
}

// cannotTell is a reconcile's error: the remote system's own, or a
// failure of the transport of any class (a request that never left
// included), sometimes marked Definite: whatever it is, the reconcile did
// not tell.
func cannotTell(v verdict) error {
	var err error
	switch n := v.variant / 4; v.variant % 4 {
	case 0:
		err = errCannotTell
	case 1:
		err = brokenError(broken(n%int(nBroken)), n/int(nBroken))
	case 2:
		err = notSentError(n)
	default:
		err = &url.Error{Op: "Get", URL: remoteURL, Err: errCallDeadline}
	}
	if v.marked {
		err = mark(err, v.variant)
	}
	return err
}

// settle is the operator, after the run: the HELD records are listed (as
// idemctl list does), each key looked up at the remote system and resolved
// through the store's Resolve, as idemctl resolve does — done: the
// operator's receipt; not done: released FAILED — and then delivered once
// more, with nothing going wrong: a done key is a duplicate, a not-done
// one runs exactly once (a poison key is refused again). So is each key
// the operator resolved during the run whose dead letters it could not
// redrive (operator.go), its record as the operator left it.
func (w *world) settle() {
	w.calm.Store(true)
	held := w.store.held()
	w.check.listed(held)
	var p *process
	deliver := func(at *attempt, done bool) {
		if p == nil {
			p = w.newProcess(0, 0)
		}
		w.redeliver(p, at, done)
	}
	for _, skey := range held {
		at, done, ok := w.resolve(&process{w: w, name: "idemctl"}, operatorActor, skey, 0)
		if !ok {
			w.check.violation("operator: resolving %s failed, with nothing going wrong", short(skey))
			continue
		}
		w.check.redriven(skey) // delivered once more, next
		deliver(at, done)
	}
	for _, r := range w.check.unredriven() {
		deliver(r.at, r.done)
	}
}

// redeliver delivers the key of at (which parked it) once more, in p, and
// checks what it did: a done key is a duplicate, a not-done one runs
// exactly once.
func (w *world) redeliver(p *process, at *attempt, done bool) {
	m := w.check.message(at.actor)
	actor := "redrive/" + m.ID
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
