package sim

import (
	"cmp"
	"slices"
	"sync"
	"testing/synctest"
	"time"
)

// A schedule runs inside a synctest bubble: time is virtual, and it moves
// only when every goroutine of the bubble is blocked. Every store request,
// every clock read of a Guard (in a process with several invocations, the
// store answers after which its Guard may write what they share, instead:
// instances.go), every effect and every step of the world (a poll, a
// response, a send, a TTL deletion) is a point: the goroutine that reaches
// it registers and blocks until the scheduler releases it.
// The scheduler waits until every goroutine is blocked (synctest.Wait),
// sorts the points by their actor's name, and lets the seeded generator
// pick one, with what happens to it (a fault, a crash, a freeze). When no
// point is pending, everything waits on a timer, and the scheduler blocks
// too so that virtual time can move to the next one.

// point is one goroutine waiting for the scheduler.
type point struct {
	actor string   // stable name: who waits (a record, the poller, …)
	kind  kind     // what it is about to do
	proc  *process // the process it runs in, nil for the world's actors
	ready chan verdict
}

// kind is what a point is about to do.
type kind int

const (
	kindRequest   kind = iota // a request to the store's server
	kindClock                 // a Guard reading its clock
	kindEffect                // an effect taking place
	kindWorld                 // a step of the world: poll, respond, send, TTL, a late request
	kindReconcile             // a reconcile asking the remote system
)

// verdict is what the scheduler decided for a point.
type verdict struct {
	fault  fault
	crash  bool          // the process dies here: before the action, or just after it (after)
	after  bool          // a request applied, an effect that took place, then the crash
	freeze time.Duration // the process stops for this long first (a zombie when it outlives its lease)
	delay  time.Duration // a slow request: how long it takes to apply
	never  bool          // a slow request that never applies
	marked bool          // a remote effect (or reconcile) marks its error Definite, whatever it is (the Guard must see through it but where the request never left)
	// careful: a remote effect marks its error Definite where idem.NotSent
	// says the request never left (the documented idiom).
	careful bool
	variant int  // which error of its class, in which wrapper (remote_errors.go)
	cancel  bool // the context of the process's invocation is cancelled first
}

type scheduler struct {
	mu      sync.Mutex
	pending []*point
	wake    chan struct{} // a point was registered while the scheduler waited
	steps   int
}

func newScheduler() *scheduler {
	return &scheduler{wake: make(chan struct{}, 1)}
}

// at registers a point and waits for its verdict.
func (s *scheduler) at(actor string, k kind, p *process) verdict {
	pt := &point{actor: actor, kind: k, proc: p, ready: make(chan verdict, 1)}
	s.mu.Lock()
	s.pending = append(s.pending, pt)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return <-pt.ready
}

// next waits until every goroutine of the bubble is blocked and returns the
// points pending then, in a stable order; none when everything waits on
// a timer or has ended (the caller then waits for the next point).
func (s *scheduler) next() []*point {
	synctest.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	slices.SortStableFunc(s.pending, func(a, b *point) int { return cmp.Compare(a.actor, b.actor) })
	return s.pending
}

// release lets pt go on with v. A clock read is named after its process
// (the Guard's clock function has no context to name its record), so the
// clock reads of one process pending together are released together, with
// the same verdict: which of them registered first may differ from run to
// run, and reading the clock changes nothing another point could observe
// (time stands still while points are pending).
func (s *scheduler) release(pt *point, v verdict) {
	s.mu.Lock()
	var go_ []*point
	s.pending = slices.DeleteFunc(s.pending, func(q *point) bool {
		if q == pt || (pt.kind == kindClock && q.kind == kindClock && q.actor == pt.actor) {
			go_ = append(go_, q)
			return true
		}
		return false
	})
	s.steps++
	s.mu.Unlock()
	for _, q := range go_ {
		q.ready <- v
	}
}

// stepsSoFar is how many points the scheduler has released.
func (s *scheduler) stepsSoFar() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.steps
}
