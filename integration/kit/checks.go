package kit

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// expected is what the run's messages must come to, added up by the
// subtests as they send. It is safe for concurrent use.
type expected struct {
	mu      sync.Mutex
	applied int            // keys whose effect takes place, once each
	valid   int            // valid messages sent, copies included: each Executed or Duplicate
	dead    map[string]int // labels that end in the dead-letter queue, once each
	atLeast map[string]int // metric -> the least it counts (Mismatch, Rejected, Failed)
}

func newExpected() *expected { return &expected{dead: map[string]int{}, atLeast: map[string]int{}} }

// sent adds keys applied once from valid messages.
func (e *expected) sent(keys, valid int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.applied += keys
	e.valid += valid
}

// deadLetter adds a message labelled label that ends in the dead-letter
// queue, counted by metric on each of its receives.
func (e *expected) deadLetter(label, metric string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.dead[label]++
	e.atLeast[metric]++
}

// neverCounted are the metrics no message of a run may count: the
// store's and the lease's troubles, which the kit's scenarios never cause.
var neverCounted = []string{consumer.MetricStoreError, consumer.MetricLeaseLost, consumer.MetricUnconfirmed, consumer.MetricHeld}

// reached reports whether the EMF totals count every message of the run:
// the logs may trail the invocations.
func (e *expected) reached(totals map[string]int) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if totals[consumer.MetricExecuted] < e.applied || totals[consumer.MetricExecuted]+totals[consumer.MetricDuplicate] < e.valid {
		return false
	}
	for m, n := range e.atLeast {
		if totals[m] < n {
			return false
		}
	}
	return true
}

// checkTotals: one Executed per applied key, Executed and Duplicate
// together at least the valid messages, each dead letter's metric at least
// once per message, and nothing in neverCounted. Failed, Mismatch and
// Rejected count a message once per receive: at least, not exactly.
func (e *expected) checkTotals(totals map[string]int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var errs []error
	if got := totals[consumer.MetricExecuted]; got != e.applied {
		errs = append(errs, fmt.Errorf("%s = %d, want %d (one per key applied)", consumer.MetricExecuted, got, e.applied))
	}
	if got := totals[consumer.MetricExecuted] + totals[consumer.MetricDuplicate]; got < e.valid {
		errs = append(errs, fmt.Errorf("%s + %s = %d, want at least %d (every valid message)", consumer.MetricExecuted, consumer.MetricDuplicate, got, e.valid))
	}
	for _, m := range slices.Sorted(maps.Keys(e.atLeast)) {
		if totals[m] < e.atLeast[m] {
			errs = append(errs, fmt.Errorf("%s = %d, want at least %d", m, totals[m], e.atLeast[m]))
		}
	}
	for _, m := range neverCounted {
		if totals[m] != 0 {
			errs = append(errs, fmt.Errorf("%s = %d, want 0", m, totals[m]))
		}
	}
	return errors.Join(errs...)
}

// checkDead: the run's labels in the dead-letter queue are exactly want,
// each once.
func (e *expected) checkDead(got map[string]int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var errs []error
	for _, l := range slices.Sorted(maps.Keys(e.dead)) {
		if got[l] != e.dead[l] {
			errs = append(errs, fmt.Errorf("%s: %d in the dead-letter queue, want %d", l, got[l], e.dead[l]))
		}
	}
	for _, l := range slices.Sorted(maps.Keys(got)) {
		if _, ok := e.dead[l]; !ok {
			errs = append(errs, fmt.Errorf("%s: %d in the dead-letter queue, want none", l, got[l]))
		}
	}
	return errors.Join(errs...)
}

// timesEach: every key of keys applied want times, by the probe's counts.
func timesEach(applied map[string]int, keys []string, want int) error {
	var errs []error
	for _, k := range keys {
		if n := applied[k]; n != want {
			errs = append(errs, fmt.Errorf("key %s applied %d times, want %d", k, n, want))
		}
	}
	return errors.Join(errs...)
}
