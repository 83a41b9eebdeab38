package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/integration/internal/lambdarun"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// The consumer's fault points (the runtime's fault switches).
const (
	PointBeforeEffect = consumer.FaultBeforeEffect
	PointAfterEffect  = consumer.FaultAfterEffect
)

// Invoker is every consumer invocation of a run: the poller's batches, the
// 8-instance fan-outs and the zombie takeovers. It dooms a share of them:
//
//   - Kill: SIGKILL before the effect or after it (at the first record
//     of the batch that reaches that point: the others are wherever they
//     are, as in a batch killed for real), or mid-batch after a random
//     delay, whatever the records are doing then. A planned kill that does
//     not fire (no record of the batch reached the point, all duplicates;
//     or the batch answered before the delay) waits for the next
//     invocation, so that the rate holds; at most one of each kind waits,
//     so that kills do not pile up and then fall in a burst on whatever
//     batch can take them (typically one killed before and back from its
//     visibility timeout, which would be killed again and again).
//   - Zombie: the batch goes to the zombie pool, whose instances hold a
//     short lease (1 s); the first record to finish its effect freezes the
//     process (SIGSTOP) for Freeze; after TakeoverAfter, when its lease has
//     run out, a copy of that record is delivered to another instance,
//     which takes the key over. The zombie then wakes inside its function
//     timeout and must be refused (LeaseLost).
//
// It satisfies esm.Invoker.
type Invoker struct {
	// Context bounds the takeovers, which outlive the invocation that
	// froze (default: not bounded).
	Context context.Context
	Main    *lambdarun.Pool // the mapping's instances
	// Key is the consumer's key: the message attribute, else the body's
	// field, that names a record's key in the events.
	Key    string
	FanOut *lambdarun.Pool // 8 instances for same-moment deliveries
	Zombie *lambdarun.Pool // short-lease instances that get frozen
	// ZombieSize is the number of instances in Zombie.
	ZombieSize    int
	Rates         Rates // Kill and Zombie are used
	Freeze        time.Duration
	TakeoverAfter time.Duration
	Events        *Events
	Seed          uint64

	once     sync.Once
	mu       sync.Mutex
	rng      *rand.Rand
	pending  map[string]int // kills and freezes planned that did not fire
	typical  time.Duration  // moving average of an invocation's duration
	zombies  atomic.Int32   // zombie instances in use
	records  atomic.Int64   // records delivered, every path
	invokes  atomic.Int64
	batches  atomic.Int64 // the poller's invocations
	takeover sync.WaitGroup
}

// Deliveries returns how many records were handed to consumers.
func (v *Invoker) Deliveries() int64 { return v.records.Load() }

// Invocations returns how many invocations were made.
func (v *Invoker) Invocations() int64 { return v.invokes.Load() }

// Wait waits for the takeovers in flight.
func (v *Invoker) Wait() { v.takeover.Wait() }

func (v *Invoker) init() {
	v.once.Do(func() {
		v.rng = rand.New(rand.NewPCG(v.Seed, 0x5eed))
		v.pending = map[string]int{}
		v.typical = 50 * time.Millisecond
		if v.Context == nil {
			v.Context = context.Background()
		}
	})
}

// Batches returns how many invocations the poller made.
func (v *Invoker) Batches() int64 { return v.batches.Load() }

// Invoke runs one batch of the poller.
func (v *Invoker) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	v.init()
	v.batches.Add(1)
	b := v.parseBatch(payload)
	if v.Zombie != nil && v.draw("zombie", v.Rates.Zombie) {
		if v.zombies.Add(1) <= int32(v.ZombieSize) {
			return v.zombie(ctx, b, payload)
		}
		v.zombies.Add(-1)
		v.requeue("zombie") // every zombie instance is busy: the next batch
	}
	return v.invoke(ctx, v.Main, b, payload)
}

// FanOutNow delivers one message to 8 instances at the same moment and
// waits for the answers.
func (v *Invoker) FanOutNow(ctx context.Context, payload []byte, copies int) {
	v.init()
	b := v.parseBatch(payload)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range copies {
		wg.Go(func() {
			select {
			case <-start:
			case <-ctx.Done():
				return
			}
			_, _ = v.invoke(ctx, v.FanOut, b, payload)
		})
	}
	close(start)
	wg.Wait()
}

// draw decides one doom of kind: a planned one left over, or a new one
// with probability p.
func (v *Invoker) draw(kind string, p float64) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.pending[kind] > 0 {
		v.pending[kind]--
		return true
	}
	return p > 0 && v.rng.Float64() < p
}

func (v *Invoker) requeue(kind string) {
	v.mu.Lock()
	v.pending[kind] = 1
	v.mu.Unlock()
}

// killPlan returns the kill for one invocation: "" (none), a fault point,
// or PointKillAfter with its delay.
func (v *Invoker) killPlan() (point string, after time.Duration) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, p := range []string{PointBeforeEffect, PointAfterEffect, lambdarun.PointKillAfter} {
		if v.pending[p] > 0 {
			v.pending[p]--
			point = p
			break
		}
	}
	if point == "" {
		if v.Rates.Kill <= 0 || v.rng.Float64() >= v.Rates.Kill {
			return "", 0
		}
		point = []string{PointBeforeEffect, PointAfterEffect, lambdarun.PointKillAfter}[v.rng.IntN(3)]
	}
	if point == lambdarun.PointKillAfter {
		after = time.Duration(1+v.rng.Int64N(int64(v.typical))) + time.Millisecond
	}
	return point, after
}

// invoke runs payload on pool, perhaps doomed to die.
func (v *Invoker) invoke(ctx context.Context, pool *lambdarun.Pool, b batch, payload []byte) ([]byte, error) {
	v.records.Add(int64(len(b.keys)))
	v.invokes.Add(1)
	point, after := v.killPlan()
	var fired atomic.Bool
	switch {
	case after > 0:
		ctx = lambdarun.WithInvokeFaults(ctx, lambdarun.InvokeFaults{KillAfter: after})
	case point != "":
		ctx = lambdarun.WithInvokeFaults(ctx, lambdarun.InvokeFaults{Fault: func(p, key string) lambdarun.Action {
			if p != point || !fired.CompareAndSwap(false, true) {
				return lambdarun.Continue
			}
			v.Events.Add(Event{Kind: EventKill, Point: p, Key: key, Pool: pool.Name(), Batch: b.keys})
			return lambdarun.Kill
		}})
	}
	began := time.Now()
	out, err := pool.Invoke(ctx, payload)
	switch {
	case err == nil:
		v.observe(time.Since(began))
	case after > 0 && ownKillAfter(err, after):
		fired.Store(true)
		v.Events.Add(Event{Kind: EventKill, Point: lambdarun.PointKillAfter, Pool: pool.Name(), Batch: b.keys, Detail: "after " + after.String()})
	default:
		v.unexpected(err, pool.Name(), b, fired.Load())
	}
	if point != "" && !fired.Load() {
		v.requeue(point)
	}
	return out, err
}

// unexpected records an invocation the harness killed at its timeout,
// one killed with its process for another invocation in it (several per
// process), or one whose process died by itself.
func (v *Invoker) unexpected(err error, pool string, b batch, killed bool) {
	switch {
	case errors.Is(err, lambdarun.ErrTimeout):
		v.Events.Add(Event{Kind: EventTimeout, Pool: pool, Batch: b.keys, Detail: err.Error()})
	case killed || !errors.Is(err, lambdarun.ErrCrashed):
	case withProcess(err):
		v.Events.Add(Event{Kind: EventProcess, Pool: pool, Batch: b.keys, Detail: err.Error()})
	default:
		v.Events.Add(Event{Kind: EventCrash, Pool: pool, Batch: b.keys, Detail: err.Error()})
	}
}

// The harness's words for a process it killed: at a fault point (any
// invocation's in it, a mid-batch kill's too) or because one of its
// invocations timed out. lambdarun names the cause only in the message.
const (
	killedAtPoint   = "killed at fault point"
	killedByTimeout = "of the same process timed out"
)

// ownKillAfter reports whether err is the mid-batch kill planned for this
// invocation (its delay, after, is the key the harness names), not that of
// another invocation in the same process.
func ownKillAfter(err error, after time.Duration) bool {
	return errors.Is(err, lambdarun.ErrCrashed) &&
		strings.Contains(err.Error(), fmt.Sprintf("%s %q key %q", killedAtPoint, lambdarun.PointKillAfter, after.String()))
}

// withProcess reports whether err is a kill the chaos or the harness
// meant for another invocation of the same process.
func withProcess(err error) bool {
	return strings.Contains(err.Error(), killedAtPoint) || strings.Contains(err.Error(), killedByTimeout)
}

func (v *Invoker) observe(d time.Duration) {
	v.mu.Lock()
	v.typical = (7*v.typical + d) / 8
	v.mu.Unlock()
}

// zombie runs a batch on the zombie pool and freezes it past its lease.
func (v *Invoker) zombie(ctx context.Context, b batch, payload []byte) ([]byte, error) {
	defer v.zombies.Add(-1)
	v.records.Add(int64(len(b.keys)))
	v.invokes.Add(1)
	var frozen atomic.Bool
	f := func(point, key string) lambdarun.Action {
		if point != PointAfterEffect || !frozen.CompareAndSwap(false, true) {
			return lambdarun.Continue
		}
		v.Events.Add(Event{Kind: EventFreeze, Point: point, Key: key, Pool: v.Zombie.Name(), Batch: b.keys,
			Detail: "frozen " + v.Freeze.String() + ", taken over after " + v.TakeoverAfter.String()})
		if rec, ok := b.record(key); ok {
			v.takeover.Go(func() { v.takeOver(rec) })
		}
		return lambdarun.Freeze
	}
	out, err := v.Zombie.Invoke(lambdarun.WithInvokeFaults(ctx, lambdarun.InvokeFaults{Fault: f}), payload)
	if err != nil {
		v.unexpected(err, v.Zombie.Name(), b, false)
	}
	if !frozen.Load() {
		v.requeue("zombie")
	}
	return out, err
}

// takeOver delivers a copy of the frozen record to a main instance once
// the zombie's lease has run out.
func (v *Invoker) takeOver(rec events.SQSMessage) {
	sleep(v.Context, v.TakeoverAfter)
	rec.MessageId = "takeover-" + rec.MessageId
	rec.ReceiptHandle = "rh-" + rec.MessageId
	payload, err := json.Marshal(events.SQSEvent{Records: []events.SQSMessage{rec}})
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(v.Context, 30*time.Second)
	defer cancel()
	v.records.Add(1)
	v.invokes.Add(1)
	if _, err := v.Main.Invoke(ctx, payload); err != nil {
		v.unexpected(err, v.Main.Name(), batch{keys: []string{v.keyOf(rec)}}, false)
	}
}

// batch is what the invoker needs of an event: each record's key.
type batch struct {
	keys    []string
	records []events.SQSMessage
}

func (v *Invoker) parseBatch(payload []byte) batch {
	var ev events.SQSEvent
	if json.Unmarshal(payload, &ev) != nil {
		return batch{}
	}
	b := batch{records: ev.Records, keys: make([]string, len(ev.Records))}
	for i, r := range ev.Records {
		b.keys[i] = v.keyOf(r)
	}
	return b
}

func (b batch) record(key string) (events.SQSMessage, bool) {
	for i, k := range b.keys {
		if k == key {
			return b.records[i], true
		}
	}
	return events.SQSMessage{}, false
}

// keyOf is a record's key as the consumer reads it: the key attribute,
// else the body's field; "" for neither.
func (v *Invoker) keyOf(r events.SQSMessage) string {
	if a, ok := r.MessageAttributes[v.Key]; ok && a.StringValue != nil {
		return *a.StringValue
	}
	var fields map[string]any
	if json.Unmarshal([]byte(r.Body), &fields) == nil {
		if k, ok := fields[v.Key].(string); ok {
			return k
		}
	}
	return ""
}
