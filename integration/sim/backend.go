package sim

import (
	"context"
	"errors"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// backend is a store under simulation: the real Store code over a model of
// its server, every request a point where the scheduler may break it.
type backend interface {
	// store is the Store every process's Guard uses (through skewed).
	store() idem.Store
	// record is the record stored under a storage key, as the server keeps
	// it (times as their writers wrote them), for the oracle.
	record(skey string) (idem.Record, bool)
	// expire is the TTL process: it may delete records past expiresAt.
	expire(now time.Time)
	// ledger is how often the transactional effect of key was committed.
	ledger(key string) int
	// held lists the storage keys of the HELD records, as an operator's
	// listing does (idemctl list --status held). The operator resolves
	// them through the store's own Get and Resolve (operator.go).
	held() []string
}

func newBackend(w *world) backend {
	if w.cfg.Backend == "redis" {
		return newRedisBackend(w)
	}
	return newDynamoBackend(w)
}

// request is one request to a model server, through the scheduler: at its
// point it may be refused, throttled, slow (applied later, or never, while
// the caller gives up at its deadline), applied with its reply lost, or
// its process may crash before or after it. apply sends it to the model;
// skey is the record it writes, checked before and after by the oracle.
func (w *world) request(ctx context.Context, skey string, apply func(), refuse func(fault) error, lost error) error {
	actor, p := w.actorOf(ctx), procOf(ctx)
	v, dead := p.at(actor, kindRequest)
	if dead {
		return errDead
	}
	if err := ctx.Err(); errors.Is(err, context.Canceled) {
		// Cancelled by its caller (at this point, or before it): the
		// client sends nothing, as the SDK and go-redis do.
		return err
	}
	token := w.check.token(actor)
	if v.fault != faultNone {
		w.check.fault(actor, v.fault)
		w.logf(actor, "request %s: %s", short(skey), v.fault)
	}
	switch v.fault {
	case faultRefuse, faultThrottle:
		return refuse(v.fault)
	case faultSlow:
		deadline, ok := ctx.Deadline()
		if v.never || (ok && !time.Now().Add(v.delay).Before(deadline)) {
			if !v.never {
				w.late(actor, token, skey, v.delay, apply)
			}
			<-ctx.Done()
			return ctx.Err()
		}
		time.Sleep(v.delay)
		if p.isDead() {
			return errDead
		}
	}
	w.applied(actor, token, skey, apply)
	if p.crashAfter(v, "its request applied") {
		return errDead
	}
	if v.fault == faultLost {
		return lost
	}
	return nil
}

// applied applies a request and has the oracle check what it changed.
func (w *world) applied(actor, token, skey string, apply func()) {
	before, existed := w.store.record(skey)
	apply()
	after, exists := w.store.record(skey)
	w.check.transition(actor, token, skey, before, after, existed, exists)
}

// late applies a request whose caller gave up, after delay: the network
// delivered it late. It is a point of its own, in no process.
func (w *world) late(actor, token, skey string, delay time.Duration, apply func()) {
	w.ghosts.Add(1)
	name := w.check.ghostName(actor)
	go func() {
		defer w.ghosts.Done()
		time.Sleep(delay)
		w.sched.at(name, kindWorld, nil)
		w.logf(name, "a late request of %s lands on %s", actor, short(skey))
		w.applied(actor, token, skey, apply)
	}()
}

// procOf is the process ctx's record runs in.
func procOf(ctx context.Context) *process {
	p, _ := ctx.Value(procKey{}).(*process)
	return p
}

type procKey struct{}
