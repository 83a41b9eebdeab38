package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// process is a Lambda execution environment (or a worker): one Guard and
// one batch handler, used by one invocation at a time (or by PerProcess at
// once: instances.go), kept warm between invocations, replaced after a
// crash or a timeout.
type process struct {
	w       *world
	slot    int
	name    string
	skew    time.Duration
	guard   *idem.Guard
	handler *sqsbatch.Handler

	mu          sync.Mutex
	dead        bool
	frozenUntil time.Time
	running     int                           // its invocations in flight
	cancels     map[string]context.CancelFunc // by invocation: the contexts of those in flight
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newProcess starts a process in slot: its skew is the slot's.
func (w *world) newProcess(slot, gen int) *process {
	p := &process{w: w, slot: slot, name: fmt.Sprintf("p%d.%d", slot, gen), skew: w.cfg.Skews[slot], cancels: map[string]context.CancelFunc{}}
	c := w.cfg
	opts := []idem.Option{
		idem.WithSafetyMargin(c.Margin), idem.WithRetention(c.Retention),
		idem.WithClock(p.clock), idem.WithObserver(w.check.observe),
	}
	if c.Lease > 0 {
		opts = append(opts, idem.WithLease(c.Lease))
	}
	if c.Cache > 0 {
		opts = append(opts, idem.WithCache(c.Cache))
	}
	if c.MaxResult > 0 {
		opts = append(opts, idem.WithMaxResultSize(c.MaxResult))
	}
	if c.Hold {
		opts = append(opts, idem.WithUnknownOutcome(idem.Hold))
	}
	g, err := idem.New(&skewed{Store: w.store.store(), w: w, p: p}, "sim", opts...)
	if err != nil {
		panic(fmt.Sprintf("sim: guard: %v", err)) // a bad Config is the simulator's bug
	}
	p.guard = g
	conc := 2
	if c.HandlerConcurrency > 0 {
		conc = c.HandlerConcurrency
	}
	hopts := []sqsbatch.Option{sqsbatch.WithLogger(quiet), sqsbatch.WithTracer(p), sqsbatch.WithConcurrency(conc), sqsbatch.WithRecordHook(p.hook)}
	if c.Visibility {
		hopts = append(hopts, sqsbatch.WithVisibility(w.queue))
	}
	if c.LastWait {
		hopts = append(hopts, sqsbatch.WithMaxReceiveCount(c.MaxReceives))
	}
	if c.Requeue {
		hopts = append(hopts, sqsbatch.WithRequeue(w.queue))
	}
	if c.Delete {
		hopts = append(hopts, sqsbatch.WithDelete(w.queue))
	}
	if c.Reconcile {
		hopts = append(hopts, sqsbatch.WithReconcile(p.reconcile))
	}
	key := sqsbatch.Attribute("key")
	if c.KeyByID {
		key = sqsbatch.MessageID
	}
	if c.Mode == "tx" {
		p.handler, err = sqsbatch.NewTx(g, key, p.txEffect, hopts...)
	} else {
		p.handler, err = sqsbatch.New(g, key, p.effect, hopts...)
	}
	if err != nil {
		panic(fmt.Sprintf("sim: handler: %v", err))
	}
	w.logf(p.name, "starts (clock skew %s)", p.skew)
	return p
}

// at is a point of a goroutine of p. A frozen process's goroutines wait
// for the thaw first. A dead process's goroutines are told so (dead): a
// crash cannot stop a goroutine from the outside, so the code of a dead
// process runs on, but nothing it does reaches the world any more — its
// requests and effects fail at once, and its response is dropped.
func (p *process) at(actor string, k kind) (v verdict, dead bool) {
	if p.isDead() {
		return verdict{}, true
	}
	v = p.w.sched.at(actor, k, p)
	if v.freeze > 0 {
		p.freeze(v.freeze)
	}
	if p.waitThaw() {
		// Thawed: every goroutine of the process woke at once; the
		// scheduler, not the runtime, says which goes on first.
		return p.at(actor, k)
	}
	if p.isDead() {
		return verdict{}, true
	}
	if v.cancel {
		p.cancelInvocation(actor)
	}
	if v.crash && !v.after {
		p.kill("crashes before " + k.String())
		return verdict{}, true
	}
	return v, false
}

// cancelInvocation cancels the contexts of p's invocations in progress, as
// a worker shutting down does, at a point of actor.
func (p *process) cancelInvocation(actor string) {
	p.mu.Lock()
	invs := slices.Sorted(maps.Keys(p.cancels))
	cancels := maps.Clone(p.cancels)
	p.mu.Unlock()
	for _, inv := range invs {
		if len(invs) == 1 {
			p.w.logf(actor, "the invocation's context is cancelled")
		} else {
			p.w.logf(actor, "the context of %s is cancelled", inv)
		}
		p.w.check.count(func(s *Stats) { s.Cancelled++ })
		cancels[inv]()
	}
}

// crashAfter kills p when v says the process dies just after the action it
// took; it reports whether it did.
func (p *process) crashAfter(v verdict, what string) bool {
	if v.crash && v.after {
		p.kill("crashes after " + what)
		return true
	}
	return false
}

// errDead is what a dead process's requests and effects return: they never
// reach the world.
var errDead = errors.New("sim: the process is dead")

func (p *process) isDead() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dead
}

// kill ends p: its lease and its messages are left behind.
func (p *process) kill(why string) {
	p.mu.Lock()
	if p.dead {
		p.mu.Unlock()
		return
	}
	p.dead = true
	p.mu.Unlock()
	p.w.check.died(p)
	p.w.logf(p.name, "%s", why)
}

func (p *process) freeze(d time.Duration) {
	p.mu.Lock()
	until := time.Now().Add(d)
	if until.After(p.frozenUntil) {
		p.frozenUntil = until
	}
	p.mu.Unlock()
	p.w.check.froze(p, time.Now(), until)
	p.w.logf(p.name, "freezes for %s", d)
}

// waitThaw waits while p is frozen, and reports whether it had to.
func (p *process) waitThaw() bool {
	p.mu.Lock()
	until := p.frozenUntil
	p.mu.Unlock()
	d := time.Until(until)
	if d > 0 {
		time.Sleep(d)
	}
	return d > 0
}

// clock is the Guard's clock: a point, then the bubble's time. The store
// sees it shifted by the process's skew (skewed).
func (p *process) clock() time.Time {
	if p.w.cfg.clockPoint() {
		_, _ = p.at(p.name+"/clock", kindClock)
	}
	return time.Now()
}

func (k kind) String() string {
	return [...]string{"a request", "a clock read", "the effect", "a step", "the reconcile"}[k]
}
