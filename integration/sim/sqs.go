package sim

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// queue is an SQS queue with a redrive policy, as the event source
// mapping sees it: a message received is invisible for the visibility
// timeout (6 × T), and a message received more than maxReceiveCount times
// goes to the dead-letter queue instead. A standard queue returns what is
// visible in any order; a FIFO queue (fifo.go) returns each message group
// in order and holds a group back while a message of it is in flight.
type queue struct {
	w   *world
	rng *rand.Rand // the poller's own: only the poller goroutine uses it

	mu    sync.Mutex
	msgs  []*sqsMessage
	alarm chan<- struct{} // told when a message reaches the DLQ (nil: nobody listens)
}

type sqsMessage struct {
	Message
	msgID     string // the message id SQS gives it (ID is the simulation's own name)
	depth     int    // how often its message was requeued before it
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
		id := m.ID
		if w.cfg.KeyByID {
			id = m.Key // SQS's duplicates of one message share its id
		}
		q.msgs = append(q.msgs, &sqsMessage{Message: m, msgID: id})
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
	if q.w.cfg.FIFO {
		visible = q.fifoVisible(now)
	} else {
		for _, m := range q.msgs {
			if m.sent && !m.deleted && !m.dlq && !m.visibleAt.After(now) {
				visible = append(visible, m)
			}
		}
		q.rng.Shuffle(len(visible), func(i, j int) { visible[i], visible[j] = visible[j], visible[i] })
	}
	var out []events.SQSMessage
	ids := map[string]bool{}
	for _, m := range visible {
		if len(out) == n {
			break
		}
		if ids[m.msgID] {
			continue // one message's duplicates are not in one batch: the response names records by id
		}
		if m.receives >= q.w.cfg.MaxReceives {
			m.dlq = true
			q.w.logf("queue", "%s (%s) to the DLQ after %d receives", m.ID, m.Key, m.receives)
			select {
			case q.alarm <- struct{}{}:
			default:
			}
			continue
		}
		ids[m.msgID] = true
		m.receives++
		m.visibleAt = now.Add(q.visibility())
		m.handle = inv + "/" + m.ID
		arn, attrs := "arn:aws:sqs:us-east-1:000000000000:sim", map[string]string{"ApproximateReceiveCount": strconv.Itoa(m.receives)}
		if q.w.cfg.FIFO {
			arn += ".fifo"
			attrs["MessageGroupId"] = m.Group
		}
		out = append(out, events.SQSMessage{
			MessageId:         m.msgID,
			ReceiptHandle:     m.handle,
			Body:              fmt.Sprintf("%s:v%d", m.Key, m.Variant),
			EventSourceARN:    arn,
			Attributes:        attrs,
			MessageAttributes: m.attributes(),
		})
	}
	return out
}

// attributes are the message attributes as its producer sent them: the
// key (unless it forgot it), and a requeue count if it set one; a requeued
// copy's, as the handler sent them.
func (m *sqsMessage) attributes() map[string]events.SQSMessageAttribute {
	if m.attrs != nil {
		return maps.Clone(m.attrs)
	}
	attrs := map[string]events.SQSMessageAttribute{}
	if !m.NoKey {
		attrs["key"] = events.SQSMessageAttribute{DataType: "String", StringValue: &m.Key}
	}
	if m.Requeues != "" {
		v, typ := m.Requeues, "Number"
		if _, err := strconv.Atoi(v); err != nil {
			typ = "String"
		}
		attrs[sqsbatch.RequeuesAttribute] = events.SQSMessageAttribute{DataType: typ, StringValue: &v}
	}
	return attrs
}

// keyAttr is a record's key attribute, for the trace.
func keyAttr(msg events.SQSMessage) string {
	if a, ok := msg.MessageAttributes["key"]; ok && a.StringValue != nil {
		return *a.StringValue
	}
	return "no key"
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

// send adds a delayed copy of msg to the queue: a new message, with a new
// message id, as SendMessage makes.
func (q *queue) send(actor string, msg events.SQSMessage, delay time.Duration) {
	q.mu.Lock()
	id := msg.ReceiptHandle[strings.IndexByte(msg.ReceiptHandle, '/')+1:] // inv/ID
	i := slices.IndexFunc(q.msgs, func(m *sqsMessage) bool { return m.ID == id })
	if i < 0 {
		q.mu.Unlock()
		panic("sim: Requeue of a message never received: " + msg.ReceiptHandle)
	}
	src := q.msgs[i]
	src.requeued = true
	m := &sqsMessage{Message: src.Message, sent: true, visibleAt: time.Now().Add(delay), attrs: msg.MessageAttributes, depth: src.depth + 1}
	m.ID = fmt.Sprintf("%s.r%d", src.ID, len(q.msgs))
	m.msgID = m.ID
	q.msgs = append(q.msgs, m)
	q.mu.Unlock()
	q.w.logf(actor, "requeues %s as %s, visible in %s", src.ID, m.ID, delay)
	q.w.check.requeued(actor, m)
}
