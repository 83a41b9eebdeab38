package sim

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// The event source mapping: it polls the queue, invokes a process per
// batch, and deletes what the batch response says is done.

// poll is the event source mapping: it sends what is due, receives batches
// while a process has room for another invocation (one, or PerProcess at
// once), and ends when every message is deleted or dead-lettered and no
// invocation runs.
func (w *world) poll() {
	slots := make([]*process, w.cfg.Concurrency)
	gens := make([]int, w.cfg.Concurrency)
	for {
		// A point first: what the poller sees and does next is the
		// scheduler's order, not the runtime's, when an invocation ending
		// and a message coming due wake it at the same instant.
		w.sched.at("poller", kindWorld, nil)
		now := time.Now()
		resolved, next := w.queue.tick(now)
		w.mu.Lock()
		running := w.running
		w.mu.Unlock()
		if resolved && running == 0 {
			return
		}
		if now.After(w.start.Add(w.horizon())) {
			w.check.stuck(running)
			return
		}
		slot := -1
		for i, p := range slots {
			if p == nil || p.isDead() || !p.full() {
				slot = i
				break
			}
		}
		if slot >= 0 {
			w.nextInv++
			inv := fmt.Sprintf("i%02d", w.nextInv)
			if batch := w.queue.receive(time.Now(), w.cfg.BatchSize, inv); len(batch) > 0 {
				if slots[slot] == nil || slots[slot].isDead() {
					gens[slot]++
					slots[slot] = w.newProcess(slot, gens[slot])
				}
				w.invoke(slots[slot], inv, batch)
				continue
			}
			// The receive may have moved the last messages to the DLQ:
			// then the queue is done now, not at the horizon.
			if resolved, next = w.queue.tick(time.Now()); resolved && running == 0 {
				continue
			}
		}
		w.wait(next)
	}
}

// horizon is when a schedule must be over: every message sent, received
// maxReceiveCount times a visibility timeout apart, and dead-lettered.
func (w *world) horizon() time.Duration {
	var last time.Duration
	for _, m := range w.cfg.Messages {
		last = max(last, m.SentAt)
	}
	round := time.Duration(w.cfg.MaxReceives+2)*w.queue.visibility() + 10*w.cfg.Timeout
	if w.cfg.Requeue {
		round *= 1 + sqsbatch.MaxRequeues // each copy takes its own round
	}
	if w.cfg.FIFO {
		round *= time.Duration(w.queue.largestGroup()) // a group's messages take their turns
	}
	if w.cfg.Hold {
		round *= 2 // the operator redrives a held key's dead letters once
	}
	return last + round
}

// wait sleeps until next (the next message due) or the end of an
// invocation, whichever comes first.
func (w *world) wait(next time.Time) {
	if end := w.start.Add(w.horizon() + time.Second); next.IsZero() || next.After(end) {
		next = end
	}
	t := time.NewTimer(time.Until(next))
	defer t.Stop()
	select {
	case <-w.idle:
	case <-t.C:
	}
}

// invoke runs one invocation of p on batch, in its own goroutine: the
// Lambda deadline, a kill at it (Lambda) or the invocation failed at it
// (Managed Instances), the batch response, the deletes.
func (w *world) invoke(p *process, inv string, batch []events.SQSMessage) {
	p.mu.Lock()
	p.running++
	p.mu.Unlock()
	w.mu.Lock()
	w.running++
	w.mu.Unlock()
	ids := make([]string, len(batch))
	for i, m := range batch {
		ids[i] = m.MessageId + "(" + keyAttr(m) + ")"
		if g := m.Attributes["MessageGroupId"]; g != "" {
			ids[i] = g + ":" + ids[i]
		}
	}
	w.logf(inv, "%s invoked with %v", p.name, ids)
	w.check.delivered(len(batch))
	go func() {
		defer w.invoked(p, inv)
		ctx, cancel := context.WithTimeout(context.Background(), w.cfg.Timeout)
		defer cancel()
		b := newBatchRun(p, inv, batch)
		b.deadline, _ = ctx.Deadline()
		ctx = context.WithValue(ctx, batchKey{}, b)
		p.mu.Lock()
		p.cancels[inv] = cancel // a worker's shutdown cancels it (verdict.cancel)
		p.mu.Unlock()
		if w.cfg.Lambda {
			done := w.atDeadline(p, b)
			defer close(done)
		}
		resp, panicked, err := handle(ctx, p.handler, batch)
		w.sched.at(inv, kindWorld, nil)
		if p.isDead() || b.timedOut.Load() {
			return // no response: every message comes back after its visibility timeout
		}
		if panicked != nil {
			// aws-lambda-go reports the panic as the invocation's error:
			// every record of the batch comes back, the done ones too.
			w.check.violation("%s: Handle panicked (%v): every record of the batch comes back, done or not", inv, panicked)
			return
		}
		w.check.batch(b, resp, err)
		failed := map[string]bool{}
		for _, f := range resp.BatchItemFailures {
			failed[f.ItemIdentifier] = true
		}
		for _, m := range batch {
			if err != nil || failed[m.MessageId] {
				continue
			}
			if sm, ok := w.queue.remove(m.ReceiptHandle); ok {
				w.check.deleted(sm)
			}
		}
		w.logf(inv, "responds: failed %v, error %v", slices.Sorted(maps.Keys(failed)), err)
	}()
}

// handle runs the handler on batch; a panic that escapes it is returned.
func handle(ctx context.Context, h *sqsbatch.Handler, batch []events.SQSMessage) (resp events.SQSEventResponse, panicked any, err error) {
	defer func() { panicked = recover() }()
	resp, err = h.Handle(ctx, events.SQSEvent{Records: batch})
	return resp, nil, err
}

// atDeadline is Lambda ending an invocation that outlives its timeout: at
// the deadline (a point of its own, so that the scheduler orders it with
// what happens at the same instant), unless the invocation is over (done
// closed) by then, the process is killed — or, on Managed Instances, the
// invocation is failed and the process, its code included, runs on.
func (w *world) atDeadline(p *process, b *batchRun) (done chan struct{}) {
	inv := b.inv
	done = make(chan struct{})
	w.ghosts.Add(1)
	go func() {
		defer w.ghosts.Done()
		t := time.NewTimer(w.cfg.Timeout)
		defer t.Stop()
		select {
		case <-done:
			return
		case <-t.C:
		}
		w.sched.at("deadline:"+inv, kindWorld, nil)
		select {
		case <-done:
		default:
			if w.cfg.managed() {
				b.timedOut.Store(true)
				w.check.count(func(s *Stats) { s.TimedOut++ })
				w.logf(inv, "times out: its response is lost, %s runs on", p.name)
				return
			}
			p.kill("killed at its deadline (" + inv + ")")
		}
	}()
	return done
}

// invoked frees p's room for inv once it is over.
func (w *world) invoked(p *process, inv string) {
	p.mu.Lock()
	p.running--
	delete(p.cancels, inv)
	p.mu.Unlock()
	w.mu.Lock()
	w.running--
	w.mu.Unlock()
	select {
	case w.idle <- struct{}{}:
	default:
	}
}

// full reports whether p runs as many invocations as it can.
func (p *process) full() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running >= p.w.cfg.perProcess()
}
