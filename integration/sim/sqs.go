package sim

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// queue is an SQS standard queue with a redrive policy, as the event
// source mapping sees it: a message received is invisible for the
// visibility timeout (6 × T), and a message received more than
// maxReceiveCount times goes to the dead-letter queue instead.
type queue struct {
	w   *world
	rng *rand.Rand // the poller's own: only the poller goroutine uses it

	mu   sync.Mutex
	msgs []*sqsMessage
}

type sqsMessage struct {
	Message
	receives  int
	visibleAt time.Time
	handle    string // of the latest receive: only it deletes or changes visibility
	sent      bool
	deleted   bool
	dlq       bool
	requeued  bool                                  // a delayed copy of it was sent (sqsbatch.WithRequeue)
	attrs     map[string]events.SQSMessageAttribute // a requeued copy's, as sent
}

func newQueue(w *world) *queue {
	q := &queue{w: w, rng: rand.New(rand.NewPCG(w.cfg.Seed, 0x51b5))}
	for _, m := range w.cfg.Messages {
		q.msgs = append(q.msgs, &sqsMessage{Message: m})
	}
	return q
}

func (q *queue) visibility() time.Duration { return 6 * q.w.cfg.Timeout }

// tick sends the messages due, and returns whether everything is resolved
// (deleted or dead-lettered) and when something is next due.
func (q *queue) tick(now time.Time) (resolved bool, next time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	resolved = true
	for _, m := range q.msgs {
		if !m.sent && !now.Before(q.w.start.Add(m.SentAt)) {
			m.sent, m.visibleAt = true, now
		}
		at := m.visibleAt
		if !m.sent {
			at = q.w.start.Add(m.SentAt)
		}
		if !m.deleted && !m.dlq {
			resolved = false
			if at.After(now) && (next.IsZero() || at.Before(next)) {
				next = at
			}
		}
	}
	return resolved, next
}

// receive takes up to n visible messages, in SQS's random order, and moves
// those past maxReceiveCount to the dead-letter queue instead.
func (q *queue) receive(now time.Time, n int, inv string) []events.SQSMessage {
	q.mu.Lock()
	defer q.mu.Unlock()
	var visible []*sqsMessage
	for _, m := range q.msgs {
		if m.sent && !m.deleted && !m.dlq && !m.visibleAt.After(now) {
			visible = append(visible, m)
		}
	}
	q.rng.Shuffle(len(visible), func(i, j int) { visible[i], visible[j] = visible[j], visible[i] })
	var out []events.SQSMessage
	for _, m := range visible {
		if len(out) == n {
			break
		}
		if m.receives >= q.w.cfg.MaxReceives {
			m.dlq = true
			q.w.logf("queue", "%s (%s) to the DLQ after %d receives", m.ID, m.Key, m.receives)
			continue
		}
		m.receives++
		m.visibleAt = now.Add(q.visibility())
		m.handle = inv + "/" + m.ID
		out = append(out, events.SQSMessage{
			MessageId:         m.ID,
			ReceiptHandle:     m.handle,
			Body:              fmt.Sprintf("%s:v%d", m.Key, m.Variant),
			EventSourceARN:    "arn:aws:sqs:us-east-1:000000000000:sim",
			Attributes:        map[string]string{"ApproximateReceiveCount": strconv.Itoa(m.receives)},
			MessageAttributes: m.attributes(),
		})
	}
	return out
}

func (m *sqsMessage) attributes() map[string]events.SQSMessageAttribute {
	if m.attrs != nil {
		return maps.Clone(m.attrs)
	}
	return map[string]events.SQSMessageAttribute{"key": {DataType: "String", StringValue: &m.Key}}
}

func (q *queue) find(handle string) *sqsMessage {
	for _, m := range q.msgs {
		if m.handle == handle && !m.deleted && !m.dlq {
			return m
		}
	}
	return nil
}

// remove deletes a message by the handle of its latest receive; an older
// handle deletes nothing (SQS answers success and keeps it).
func (q *queue) remove(handle string) (*sqsMessage, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	m := q.find(handle)
	if m == nil {
		return nil, false
	}
	m.deleted = true
	return m, true
}

// ChangeVisibility implements sqsbatch.Visibility.
func (q *queue) ChangeVisibility(_ context.Context, msg events.SQSMessage, timeout time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if m := q.find(msg.ReceiptHandle); m != nil {
		m.visibleAt = time.Now().Add(timeout)
	}
	return nil
}

// Requeue implements sqsbatch.Requeue: SendMessage with DelaySeconds, a
// request of the record's process, which may be refused or lose its reply
// (the copy sent all the same), each retried up to three attempts as the
// SDK's retryer would, or crash the process before or after.
func (q *queue) Requeue(ctx context.Context, msg events.SQSMessage, delay time.Duration) error {
	p, actor := procOf(ctx), q.w.actorOf(ctx)
	if p == nil {
		panic("sim: Requeue outside a record of a process")
	}
	for try := range 3 {
		v, dead := p.at(actor+"/requeue", kindRequest)
		if dead {
			return errDead
		}
		if v.fault == faultRefuse || v.fault == faultThrottle {
			q.w.logf(actor, "SendMessage %s", v.fault)
			time.Sleep(jitter(try))
			continue
		}
		q.send(actor, msg, delay)
		if p.crashAfter(v, "requeue") {
			return errDead
		}
		if v.fault == faultLost {
			q.w.logf(actor, "SendMessage: reply lost")
			time.Sleep(jitter(try))
			continue
		}
		return nil
	}
	return errors.New("sim: SendMessage failed three times")
}

// Delete implements sqsbatch.Deleter: DeleteMessage by the receipt handle
// (an older handle deletes nothing), a request of the record's process,
// which may be refused, lose its reply (deleted all the same), or crash the
// process before or after.
func (q *queue) Delete(ctx context.Context, msg events.SQSMessage) error {
	p, actor := procOf(ctx), q.w.actorOf(ctx)
	if p == nil {
		panic("sim: Delete outside a record of a process")
	}
	v, dead := p.at(actor+"/delete", kindRequest)
	if dead {
		return errDead
	}
	if v.fault == faultRefuse || v.fault == faultThrottle {
		q.w.logf(actor, "DeleteMessage %s", v.fault)
		return errors.New("sim: DeleteMessage " + v.fault.String())
	}
	if sm, ok := q.remove(msg.ReceiptHandle); ok {
		q.w.logf(actor, "deletes %s at once", msg.MessageId)
		q.w.check.deleted(sm)
	}
	if p.crashAfter(v, "delete") {
		return errDead
	}
	if v.fault == faultLost {
		return errors.New("sim: DeleteMessage reply lost")
	}
	return nil
}

// send adds a delayed copy of msg to the queue.
func (q *queue) send(actor string, msg events.SQSMessage, delay time.Duration) {
	q.mu.Lock()
	i := slices.IndexFunc(q.msgs, func(m *sqsMessage) bool { return m.ID == msg.MessageId })
	if i < 0 {
		q.mu.Unlock()
		panic("sim: Requeue of a message never sent: " + msg.MessageId)
	}
	src := q.msgs[i]
	src.requeued = true
	m := &sqsMessage{Message: src.Message, sent: true, visibleAt: time.Now().Add(delay), attrs: msg.MessageAttributes}
	m.ID = fmt.Sprintf("%s.r%d", src.ID, len(q.msgs))
	q.msgs = append(q.msgs, m)
	q.mu.Unlock()
	q.w.logf(actor, "requeues %s as %s, visible in %s", src.ID, m.ID, delay)
}

// poll is the event source mapping: it sends what is due, receives batches
// while an invocation slot is free, and ends when every message is deleted
// or dead-lettered and no invocation runs.
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
			if p == nil || p.isDead() || !p.isBusy() {
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
			_, next = w.queue.tick(time.Now())
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
// Lambda deadline, a kill at it (Lambda), the batch response, the deletes.
func (w *world) invoke(p *process, inv string, batch []events.SQSMessage) {
	p.mu.Lock()
	p.busy = true
	p.mu.Unlock()
	w.mu.Lock()
	w.running++
	w.mu.Unlock()
	ids := make([]string, len(batch))
	for i, m := range batch {
		ids[i] = m.MessageId + "(" + *m.MessageAttributes["key"].StringValue + ")"
	}
	w.logf(inv, "%s invoked with %v", p.name, ids)
	w.check.delivered(len(batch))
	go func() {
		defer w.invoked(p)
		ctx, cancel := context.WithTimeout(context.Background(), w.cfg.Timeout)
		defer cancel()
		if w.cfg.Lambda {
			done := w.killAtDeadline(p, inv)
			defer close(done)
		}
		resp, err := p.handler.Handle(ctx, events.SQSEvent{Records: batch})
		w.sched.at(inv, kindWorld, nil)
		if p.isDead() {
			return // no response: every message comes back after its visibility timeout
		}
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

// killAtDeadline is Lambda ending an invocation that outlives its timeout:
// at the deadline (a point of its own, so that the scheduler orders it
// with what happens at the same instant) the process is killed, unless the
// invocation is over (done closed) by then.
func (w *world) killAtDeadline(p *process, inv string) (done chan struct{}) {
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
			p.kill("killed at its deadline (" + inv + ")")
		}
	}()
	return done
}

// invoked frees p's slot once its invocation is over.
func (w *world) invoked(p *process) {
	p.mu.Lock()
	p.busy = false
	p.mu.Unlock()
	w.mu.Lock()
	w.running--
	w.mu.Unlock()
	select {
	case w.idle <- struct{}{}:
	default:
	}
}

func (p *process) isBusy() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.busy
}
