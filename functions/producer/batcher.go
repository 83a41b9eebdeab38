package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// entry is one message waiting for a batch.
type entry struct {
	key   string
	body  string
	trace map[string]string // the send span's context (traceparent...), when tracing
	size  int               // what the message counts toward the batch's payload limit
	done  chan sent         // buffered: the batch never waits for the message

	// Set by submit; flushed and blocked are guarded by the batcher's mutex.
	ctx     context.Context // the effect's: its record may be released once it ends
	b       *batcher        // the batcher it was submitted to
	flushed bool            // handed to a SendMessageBatch call
	blocked bool            // its submit waits for it: counted in b.blocked
}

// tell gives the entry its result. The batcher counts its submit as no
// longer waiting from here on, before the submit wakes, so that the other
// entries of its batch are not flushed as if nobody could join them.
func (e *entry) tell(s sent) {
	if e.b != nil {
		e.b.release(e)
	}
	e.done <- s
}

func newEntry(key, body string) *entry {
	return &entry{key: key, body: body, size: messageSize(key, body), done: make(chan sent, 1)}
}

// messageSize is what a message counts toward the SendMessageBatch payload
// limit: its body and its attributes' names, data types and values.
func messageSize(key, body string) int {
	return len(body) + len(keyAttribute) + len(attributeType) + len(key)
}

// carry adds the trace context attributes (otelidem.MessageAttributes) to
// the message, and their size to its size. Call it before submit.
func (e *entry) carry(attrs map[string]string) {
	e.trace = attrs
	for name, value := range attrs {
		e.size += len(name) + len(attributeType) + len(value)
	}
}

// tooLarge is the error of a message that no SendMessageBatch call can take.
func tooLarge(size int) error {
	return fmt.Errorf("%w: %w: the message is %d bytes (body and attributes), more than the %d bytes SQS takes",
		ErrBadMessage, ErrTooLarge, size, maxBatchBytes)
}

type sent struct {
	messageID string
	err       error
}

func (s sent) result() ([]byte, error) {
	if s.err != nil {
		return nil, s.err
	}
	return []byte(s.messageID), nil
}

// batcher groups the entries of concurrent messages into SendMessageBatch
// calls: a batch goes when it has 10 entries, when the next entry would take
// its payload over maxBatchBytes, when no worker is left that could add to
// it (every worker that joined waits in submit, or has left), or linger
// after its first entry.
//
// An entry is sent only while its message may still be sent: an entry whose
// context (the effect's) ends before its batch goes is taken out and never
// sent, and each call runs under a context that ends with the earliest of
// its entries' deadlines (see batchContext).
type batcher struct {
	ctx    context.Context // the invocation's: the parent of every batch's context
	send   func(ctx context.Context, batch []*entry)
	linger time.Duration

	mu           sync.Mutex
	pending      []*entry
	pendingBytes int
	timer        *time.Timer

	// workers may still submit (join, leave); blocked is how many entries'
	// submits wait for their send. Once blocked reaches workers, nobody can
	// add to the pending batch and it goes at once. No worker joined
	// (joined false): only size and linger flush.
	joined           bool
	workers, blocked int

	// wg counts the send goroutines and the armed linger timer; wait
	// waits for them, so that none outlives the invocation.
	wg sync.WaitGroup
}

func newBatcher(ctx context.Context, send func(context.Context, []*entry), linger time.Duration) *batcher {
	return &batcher{ctx: ctx, send: send, linger: linger}
}

// submit queues e and waits for its send, or for ctx to end. It returns the
// SQS message id.
func (b *batcher) submit(ctx context.Context, e *entry) ([]byte, error) {
	if e.size > maxBatchBytes {
		return nil, tooLarge(e.size)
	}
	b.mu.Lock()
	if err := ctx.Err(); err != nil {
		b.mu.Unlock()
		return nil, notSent(fmt.Errorf("producer: %w: %v", idem.ErrNotSent, err))
	}
	e.ctx, e.b, e.blocked = ctx, b, true
	b.blocked++
	defer b.release(e)
	if len(b.pending) > 0 && b.pendingBytes+e.size > maxBatchBytes {
		b.flushLocked()
	}
	b.pending = append(b.pending, e)
	b.pendingBytes += e.size
	if len(b.pending) >= maxBatch || b.idleLocked() {
		b.flushLocked()
	} else if b.timer == nil {
		b.wg.Add(1) // done by the timer's function, or by stopTimerLocked
		b.timer = time.AfterFunc(b.linger, func() {
			defer b.wg.Done()
			b.flush()
		})
	}
	b.mu.Unlock()

	select {
	case s := <-e.done:
		return s.result()
	case <-ctx.Done():
	}
	b.mu.Lock()
	inFlight := e.flushed
	if !inFlight {
		b.removeLocked(e)
	}
	b.mu.Unlock()
	if !inFlight {
		// Out of the batch before it went: never sent.
		return nil, notSent(fmt.Errorf("producer: %w, no batch went before the deadline: %v", idem.ErrNotSent, ctx.Err()))
	}
	select {
	case s := <-e.done: // it finished just in time
		return s.result()
	default:
	}
	// The call ends by this deadline too (batchContext), but SQS may have
	// taken the message already. The Guard releases the record, so a later
	// run may send the message again; the consumer dedups it by key.
	return nil, fmt.Errorf("%w: the SendMessageBatch call was in flight when the time for the send ran out: %w",
		ErrSendUnknown, ctx.Err())
}

// join counts n workers that may submit, before any of them starts.
func (b *batcher) join(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.joined = true
	b.workers += n
}

// leave is called by a worker that will submit no more: the pending batch
// goes if the others all wait for it.
func (b *batcher) leave() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.workers--
	if b.idleLocked() {
		b.flushLocked()
	}
}

// idleLocked reports whether entries are pending and every worker still
// there waits in submit: nobody can add to the batch.
func (b *batcher) idleLocked() bool {
	return len(b.pending) > 0 && b.joined && b.blocked >= b.workers
}

// release counts e's submit as no longer waiting; once per entry.
func (b *batcher) release(e *entry) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e.blocked {
		e.blocked = false
		b.blocked--
	}
}

// removeLocked takes e out of the pending batch, if it is there.
func (b *batcher) removeLocked(e *entry) {
	for i, p := range b.pending {
		if p == e {
			b.pending = append(b.pending[:i], b.pending[i+1:]...)
			b.pendingBytes -= e.size
			break
		}
	}
	if len(b.pending) == 0 {
		b.stopTimerLocked()
	}
}

func (b *batcher) flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushLocked()
}

func (b *batcher) stopTimerLocked() {
	if b.timer == nil {
		return
	}
	if b.timer.Stop() {
		b.wg.Done() // the function will not run
	}
	b.timer = nil
}

func (b *batcher) flushLocked() {
	b.stopTimerLocked()
	var batch []*entry
	for _, e := range b.pending {
		if e.ctx.Err() != nil {
			continue // its submit is returning "not sent"
		}
		e.flushed = true
		batch = append(batch, e)
	}
	b.pending, b.pendingBytes = nil, 0
	if len(batch) == 0 {
		return
	}
	ctx, cancel := batchContext(b.ctx, batch)
	b.wg.Go(func() {
		defer cancel()
		b.send(ctx, batch)
	})
}

// wait stops the linger timer and waits for every send to finish. Call it
// once no submit is running.
func (b *batcher) wait() {
	b.mu.Lock()
	b.stopTimerLocked()
	b.mu.Unlock()
	b.wg.Wait()
}

// batchContext is the context of a batch's calls, retries included: parent
// (the invocation's), ending at the earliest deadline of the entries'
// contexts. Once an entry's context ends, its message gives up and the Guard
// releases its record, so the batch must not be sent or retried past that
// point. The entries' contexts are the Guard's effect contexts, children of
// parent that end by their deadline or with parent, so the deadline is all
// it takes.
func batchContext(parent context.Context, batch []*entry) (context.Context, context.CancelFunc) {
	var earliest time.Time
	for _, e := range batch {
		if d, ok := e.ctx.Deadline(); ok && (earliest.IsZero() || d.Before(earliest)) {
			earliest = d
		}
	}
	if earliest.IsZero() {
		return context.WithCancel(parent)
	}
	return context.WithDeadline(parent, earliest)
}
