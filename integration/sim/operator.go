package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// The operator of a Hold world: idemctl's list, inspect and resolve, as
// the runbook has them. During the run, now and then, it lists the HELD
// records and settles each whose key has a message in the dead-letter
// queue: it reads the record (the store's Get), asks the remote system,
// writes its truth through the store's own Resolve — done: a receipt of
// the operator's; not done: FAILED — and redrives the key's dead letters.
// Copies of the key may still be on their way and meet the record as it
// changes; late requests land; sometimes two operators answer one alarm
// and settle the same key at once. Its requests are points like any,
// refused, lost or slow: a Resolve whose reply is lost is sent again and
// must find its own write. What it has not settled when the queue is done,
// the operator settles after the run, with nothing going wrong (settle).

// resolver is what idemctl uses of a store beyond idem.Store: both stores
// have it.
type resolver interface {
	Get(ctx context.Context, key string) (idem.Record, bool, error)
	Resolve(ctx context.Context, skey string, old idem.Record, to idem.Status, expires, now time.Time) (idem.Record, bool, error)
}

// operatorActor names the operator's points and writes.
const operatorActor = "operator"

// isOperator reports whether actor is an operator's (its resolves during
// the run, or after it).
func isOperator(actor string) bool {
	return len(actor) >= len(operatorActor) && actor[:len(operatorActor)] == operatorActor
}

// operate is the operator during the run, until done (the queue is done):
// the alarm on the dead-letter queue (alarm) calls it, and it answers
// some time later.
func (w *world) operate(alarm <-chan struct{}, done <-chan struct{}) {
	defer w.ghosts.Done()
	r := rand.New(rand.NewPCG(w.cfg.Seed, 0x6f70))
	for round := 1; ; round++ {
		select {
		case <-done:
			return
		case <-alarm:
		}
		t := time.NewTimer(time.Duration(r.Int64N(int64(w.queue.visibility()))))
		select {
		case <-done:
			t.Stop()
			return
		case <-t.C:
		}
		w.sched.at(operatorActor, kindWorld, nil)
		w.operatorRound(round, r)
	}
}

// operatorRound settles, once each, the held keys with a dead letter.
func (w *world) operatorRound(round int, r *rand.Rand) {
	for _, skey := range w.store.held() {
		if w.check.resolvedLive(skey) || !w.queue.deadLetter(w.check.itemOf(skey)) {
			continue
		}
		p := &process{w: w, name: fmt.Sprintf("idemctl.%d", round)}
		if r.IntN(3) != 0 {
			if _, _, ok := w.resolve(p, operatorActor, skey, 0); ok {
				w.redrive(skey)
			}
			continue
		}
		// Two operators answer the same alarm: both read the record, both
		// write, each after its own thought (not in the same
		// millisecond); one write lands, the other finds the record
		// changed.
		var wg sync.WaitGroup
		oks := make([]bool, 2)
		thoughts := []time.Duration{time.Duration(r.IntN(3)) * time.Millisecond, time.Duration(3+r.IntN(3)) * time.Millisecond}
		for i, actor := range []string{operatorActor, operatorActor + "/b"} {
			wg.Go(func() {
				q := &process{w: w, name: fmt.Sprintf("%s.%d", p.name, i)}
				_, _, oks[i] = w.resolve(q, actor, skey, thoughts[i])
			})
		}
		wg.Wait()
		if oks[0] && oks[1] {
			w.check.violation("%s: two operators' resolves both report they wrote", short(skey))
		}
		if slices.Contains(oks, true) {
			w.redrive(skey)
		}
	}
}

// resolve is idemctl resolve of skey by actor, in p: it reads the record
// (it must be HELD), asks the remote system about its key, and, think
// later, writes the answer through the store's Resolve. ok: Resolve wrote
// (or found its own write).
func (w *world) resolve(p *process, actor, skey string, think time.Duration) (at *attempt, done, ok bool) {
	st, can := w.store.store().(resolver)
	if !can {
		panic(fmt.Sprintf("sim: the %s store has no Get and Resolve", w.cfg.Backend))
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.Timeout)
	defer cancel()
	ctx = context.WithValue(context.WithValue(ctx, actorKey{}, actor), procKey{}, p)
	old, found, err := st.Get(ctx, skey)
	switch {
	case err != nil:
		w.logf(actor, "inspects %s: %v", short(skey), err)
		return nil, false, false
	case !found || old.Status != idem.StatusHeld:
		w.logf(actor, "inspects %s: %s, not held", short(skey), statusText(old.Status))
		return nil, false, false
	}
	if at = w.check.holder(old.Lease); at == nil {
		w.check.violation("HELD record %s under lease %s, which no attempt held", short(skey), w.check.lease(old.Lease))
		return nil, false, false
	}
	if think > 0 {
		time.Sleep(think)
	}
	done, _ = w.remote.lookup(at.key)
	to := idem.StatusFailed
	if done {
		to = idem.StatusCompleted
	}
	now := time.Now()
	expires := now.Add(w.cfg.Retention) // idemctl resolve --retention, the consumer's
	w.logf(actor, "resolves %s (%s): %s", short(skey), at.key, to)
	w.check.resolving(actor, skey, old, expires)
	rec, changed, err := st.Resolve(ctx, skey, old, to, expires, now)
	w.check.resolved(actor, skey, old, to, rec, changed, err)
	return at, done, err == nil && !changed
}

// redrive moves the dead letters of skey's item back to the queue (their
// receive counts start again), unless the queue is done: then settle
// delivers the key once more instead.
func (w *world) redrive(skey string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.polled {
		return
	}
	item := w.check.itemOf(skey)
	if n := w.queue.redrive(item); n > 0 {
		w.check.redriven(skey)
		w.logf(operatorActor, "redrives %d dead letters of %s", n, item)
		select {
		case w.idle <- struct{}{}: // the poller: messages are due
		default:
		}
	}
}

// deadLetter reports whether a message of item is in the dead-letter
// queue.
func (q *queue) deadLetter(item string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.ContainsFunc(q.msgs, func(m *sqsMessage) bool { return m.dlq && m.Key == item })
}

// redrive moves item's dead letters back to the queue, visible at once,
// and returns how many.
func (q *queue) redrive(item string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, m := range q.msgs {
		if m.dlq && m.Key == item {
			m.dlq, m.receives, m.visibleAt = false, 0, time.Now()
			n++
		}
	}
	return n
}
