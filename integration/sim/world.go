package sim

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// world is one schedule: the queue, the processes that consume it, the
// store's server, the scheduler, and what the oracle needs to know.
type world struct {
	cfg    Config
	rng    *rand.Rand // the scheduler's: used by the scheduler goroutine only
	sched  *scheduler
	start  time.Time
	trace  *trace
	check  *oracle
	queue  *queue
	store  backend
	rec    *Recording  // nil unless recorded (RunRecorded)
	remote *remote     // the remote system of the effect (Config.Remote)
	calm   atomic.Bool // after the run, the operator's turn: no faults

	mu       sync.Mutex
	attempts map[string]*attempt // per actor: its Guard attempt in progress
	running  int                 // invocations in flight
	polled   bool                // the queue is done: nothing is redriven any more
	idle     chan struct{}       // an invocation ended
	ghosts   sync.WaitGroup      // late requests still in the network
	nextInv  int
}

// Run runs the schedule of seed and returns what the oracle found (nil: every
// invariant held) and the world's statistics.
func Run(t *testing.T, cfg Config) (res Result) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(cfg)
		res = w.run()
	})
	return res
}

// Result is what one schedule found.
type Result struct {
	Cfg        Config
	Violations []string
	Doubles    map[string]int // double effects by cause (allowed ones)
	Steps      int
	Stats      Stats
	trace      *trace
}

// Trace is who did what, at which virtual time.
func (r Result) Trace() string { return r.trace.String() }

// Explain is the trace and the violations, their lease tokens named alike.
func (r Result) Explain() (trace string, violations []string) {
	names := map[string]string{}
	trace = named(r.trace.raw(), names)
	for _, v := range r.Violations {
		violations = append(violations, named(v, names))
	}
	return trace, violations
}

// Stats counts what a schedule did.
type Stats struct {
	Deliveries, Effects, Deleted, DLQ, DLQApplied, Requeued int
	// DLQInProgress: dead-lettered after meeting InProgress on its last
	// allowed receive, its key's effect applied (the copies WithRequeue is
	// for).
	DLQInProgress int
	// DLQDone: dead-lettered although done on its last allowed receive (its
	// invocation died before the batch response: WithDelete is for these).
	DLQDone int
	// Cancelled: invocations whose context a worker's shutdown cancelled;
	// Panics: panics of the record hook and the tracer.
	Cancelled, Panics int
	// Held: records parked HELD (Config.Hold); SettledDone,
	// SettledNotDone: held keys an operator resolved, SettledLive of
	// them during the run.
	Held, SettledDone, SettledNotDone, SettledLive int
	// Lapsed: UNKNOWN or lapsed IN_PROGRESS records taken past their
	// expiry, as absent.
	Lapsed int
	// Uncounted: calls that took over an unknown outcome nobody settled,
	// ran the effect again, and ended Unconfirmed or LeaseLost: the
	// window entered, reported as no Rerun.
	Uncounted int
	// Shared processes (instances.go). TimedOut: invocations Managed
	// Instances failed at their deadline, their process running on;
	// MetSibling: acquires that met the live lease of another invocation
	// of their own process (InProgress, as between processes);
	// OwedAcross: receipts one invocation owed that another invocation's
	// copy of the key, in the same process, wrote.
	TimedOut, MetSibling, OwedAcross int
	Outcomes                         map[string]int
}

func newWorld(cfg Config) *world {
	w := &world{
		cfg:      cfg,
		rng:      rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0xa0761d6478bd642f)),
		sched:    newScheduler(),
		start:    time.Now(),
		attempts: map[string]*attempt{},
		idle:     make(chan struct{}, 1),
		remote:   newRemote(),
	}
	w.trace = &trace{start: w.start}
	w.check = newOracle(w)
	w.queue = newQueue(w)
	w.store = newBackend(w)
	return w
}

func (w *world) run() Result {
	done, polled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		go w.ttl(polled)
		if w.cfg.Remote && w.cfg.Hold {
			w.ghosts.Add(1)
			alarm := make(chan struct{}, 1)
			w.queue.alarm = alarm
			go w.operate(alarm, polled)
		}
		w.poll()
		w.mu.Lock()
		w.polled = true
		w.mu.Unlock()
		close(polled)
		w.ghosts.Wait() // late requests land (or not) before the end
		if w.cfg.Remote {
			w.settle()
			w.ghosts.Wait()
		}
	}()
	for {
		pts := w.sched.next()
		if len(pts) == 0 {
			select {
			case <-w.sched.wake:
				continue
			case <-done:
			}
			break
		}
		pt := pts[w.rng.IntN(len(pts))]
		w.sched.release(pt, w.decide(pt))
	}
	w.check.final()
	return Result{Cfg: w.cfg, Violations: w.check.violations, Doubles: w.check.doubles, Steps: w.sched.steps, Stats: w.check.stats, trace: w.trace}
}

// since is the virtual time since the start, for traces.
func (w *world) since() time.Duration { return time.Since(w.start) }

// logf adds a line to the trace.
func (w *world) logf(actor, format string, args ...any) {
	w.trace.add(w.since(), w.sched.stepsSoFar(), actor, format, args)
}

// actorOf names the actor of ctx: the delivery it runs (set by the tracer).
func (w *world) actorOf(ctx context.Context) string {
	if a, ok := ctx.Value(actorKey{}).(string); ok {
		return a
	}
	return "?"
}

type actorKey struct{}

// ttl is the store's TTL process: now and then it deletes what expired,
// until the queue is done.
func (w *world) ttl(done <-chan struct{}) {
	w.ghosts.Add(1)
	defer w.ghosts.Done()
	r := rand.New(rand.NewPCG(w.cfg.Seed, 0x77))
	every := w.cfg.Retention / 2
	if w.cfg.Lapse {
		// Its retention is short, its run long: TTL lags (DynamoDB's by
		// hours), and every pass is a point.
		every = max(every, w.queue.visibility()/2)
	}
	for {
		t := time.NewTimer(time.Duration(r.Int64N(int64(every))) + time.Millisecond)
		select {
		case <-done:
			t.Stop()
			return
		case <-t.C:
		}
		w.sched.at("ttl", kindWorld, nil)
		w.store.expire(time.Now())
	}
}
