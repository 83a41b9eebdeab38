package chaos

import (
	"sync"
	"time"
)

// Kinds of events: what the chaos did to an invocation.
const (
	EventKill    = "kill"    // SIGKILL at a fault point or mid-batch
	EventFreeze  = "freeze"  // SIGSTOP past the lease, then taken over
	EventTimeout = "timeout" // the harness killed an invocation at the function timeout
	EventCrash   = "crash"   // the process died on its own
	// EventProcess: the invocation died with its process, which another
	// invocation in it (Config.PerProcess) was killed or timed out in.
	EventProcess = "process"
)

// Event is one thing done to an invocation. Batch lists the keys of
// its records: a kill or freeze can leave any of them between their effect
// and their receipt, which is how double effects are attributed.
type Event struct {
	At     time.Time
	Kind   string
	Point  string // before-effect, after-effect, kill-after (mid-batch)
	Key    string // the key at the fault point, if any
	Pool   string // the pool the invocation ran on
	Batch  []string
	Detail string
}

// Events is a concurrency-safe event log.
type Events struct {
	mu   sync.Mutex
	list []Event
}

// Add records ev.
func (e *Events) Add(ev Event) {
	if ev.At.IsZero() {
		ev.At = time.Now()
	}
	e.mu.Lock()
	e.list = append(e.list, ev)
	e.mu.Unlock()
}

// All returns the events so far, in order.
func (e *Events) All() []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Event(nil), e.list...)
}

// Count returns how many events of kind there were.
func (e *Events) Count(kind string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, ev := range e.list {
		if ev.Kind == kind {
			n++
		}
	}
	return n
}
