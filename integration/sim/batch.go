package sim

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// batchRun is one invocation's batch as the oracle follows it: when each
// record began (the tracer's Record) and what it was reported as (the
// record hook), in one sequence, so that the order of the records of a
// message group, or of a key, can be checked against the response.
type batchRun struct {
	inv      string
	p        *process
	records  []events.SQSMessage
	deadline time.Time // its invocation's
	// timedOut: Lambda Managed Instances failed it at its deadline; its
	// code runs on, its response is lost.
	timedOut atomic.Bool

	mu      sync.Mutex
	seq     int
	started []int // per record: its place in the sequence when it began, 0 never
	ended   []int // when it was reported, 0 never
	reports []int // how often it was reported
	results []sqsbatch.RecordResult
}

type batchKey struct{}

func newBatchRun(p *process, inv string, records []events.SQSMessage) *batchRun {
	n := len(records)
	return &batchRun{inv: inv, p: p, records: records, started: make([]int, n), ended: make([]int, n),
		reports: make([]int, n), results: make([]sqsbatch.RecordResult, n)}
}

func batchOf(ctx context.Context) *batchRun {
	b, _ := ctx.Value(batchKey{}).(*batchRun)
	return b
}

// index is the record of b with message id (unique in a batch: the queue
// never puts one message's duplicates in one batch) or receipt handle.
func (b *batchRun) index(match func(events.SQSMessage) bool) int {
	i := slices.IndexFunc(b.records, match)
	if i < 0 {
		panic("sim: a record not in its batch")
	}
	return i
}

func (b *batchRun) began(handle string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	b.started[b.index(func(m events.SQSMessage) bool { return m.ReceiptHandle == handle })] = b.seq
}

func (b *batchRun) reported(r sqsbatch.RecordResult) events.SQSMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	i := b.index(func(m events.SQSMessage) bool { return m.MessageId == r.MessageID })
	b.ended[i], b.results[i] = b.seq, r
	b.reports[i]++
	return b.records[i]
}

// Batch implements sqsbatch.Tracer; it may panic (PTracerPanic), at the
// start or at the end of the batch: the handler must survive it.
func (p *process) Batch(ctx context.Context, _ events.SQSEvent) (context.Context, func(events.SQSEventResponse, error)) {
	inv := batchOf(ctx).inv
	p.mayPanic(p.w.cfg.PTracerPanic, inv, "the tracer, at the batch's start")
	return ctx, func(events.SQSEventResponse, error) {
		p.mayPanic(p.w.cfg.PTracerPanic, inv, "the tracer, at the batch's end")
	}
}

// Record implements sqsbatch.Tracer: it names the record's context after
// the delivery, so that its points have a stable actor, and puts its
// process there. It panics only at the record's end (a panic before it
// returns would leave the record's requests nameless).
func (p *process) Record(ctx context.Context, msg events.SQSMessage) (context.Context, func(sqsbatch.RecordResult)) {
	actor := msg.ReceiptHandle // unique per delivery: inv/message
	if p.w.cfg.FIFO {
		// Records of two message groups may wait for one key (the
		// handler runs its copies one after the other): which of them
		// takes it first is the scheduler's choice, not the runtime's.
		p.w.sched.at(actor+"/begin", kindWorld, nil)
	}
	batchOf(ctx).began(actor)
	ctx = context.WithValue(context.WithValue(ctx, actorKey{}, actor), procKey{}, p)
	return ctx, func(sqsbatch.RecordResult) {
		p.mayPanic(p.w.cfg.PTracerPanic, actor, "the tracer, at the record's end")
	}
}

// hook is the handler's record hook: the oracle checks what each record
// was reported as (skipped records included, which no tracer sees). It
// may panic (PHookPanic) after.
func (p *process) hook(ctx context.Context, r sqsbatch.RecordResult) {
	msg := batchOf(ctx).reported(r)
	if !p.isDead() {
		p.w.check.recorded(p, msg.ReceiptHandle, msg, r)
	}
	p.mayPanic(p.w.cfg.PHookPanic, msg.ReceiptHandle, "the record hook")
}

// mayPanic panics with probability prob, decided by what and where. The
// value names the seed: a panic that kills the test binary (a handler that
// let it escape one of its goroutines) still says which schedule it was.
func (p *process) mayPanic(prob float64, where, what string) {
	if p.isDead() || !p.w.chance(prob, where, what) {
		return
	}
	p.w.logf(where, "%s panics", what)
	p.w.check.count(func(s *Stats) { s.Panics++ })
	panic(fmt.Sprintf("sim: seed %d: %s panics (%s)", p.w.cfg.Seed, what, where))
}
