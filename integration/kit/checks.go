package kit

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// expected is what the run's messages must come to, added up by the
// subtests as they send, and checked against the EMF totals by what the
// consumer's promise allows. It is safe for concurrent use.
type expected struct {
	p promise

	mu      sync.Mutex
	keys    int            // keys whose effect takes place: each once Executed, Reconciled or Rerun (but those an operator settled done)
	valid   int            // valid messages sent, copies included: each ends Executed, Duplicate, Reconciled or Rerun
	unknown int            // of keys, those whose first attempt leaves an unknown outcome (a crash, a partner's 5xx, lost or late reply)
	dead    map[string]int // labels that end in the dead-letter queue, once each
	atLeast map[string]int // metric -> the least it counts (Mismatch, Rejected, Failed)
}

func newExpected(p promise) *expected {
	return &expected{p: p, dead: map[string]int{}, atLeast: map[string]int{}}
}

// sent adds keys applied once from valid messages.
func (e *expected) sent(keys, valid int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.keys += keys
	e.valid += valid
}

// uncertain adds a key sent in one valid message whose first attempt
// leaves an unknown outcome: a crash (which writes no EMF line), or a
// failure the effect cannot call definite (failed: counted Failed). The
// attempt after it settles the key the promise's way: Executed,
// Reconciled, Rerun, or Held.
func (e *expected) uncertain(failed bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.keys++
	e.valid++
	e.unknown++
	if failed {
		e.atLeast[consumer.MetricFailed]++
	}
}

// failedOnce adds a key sent in one valid message whose first attempt
// fails definitely (Failed), the next one running it.
func (e *expected) failedOnce() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.keys++
	e.valid++
	e.atLeast[consumer.MetricFailed]++
}

// deadLetter adds a message labelled label that ends in the dead-letter
// queue, counted by metric on each of its receives.
func (e *expected) deadLetter(label, metric string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.dead[label]++
	e.atLeast[metric]++
}

// heldLetter adds a message labelled label of a key found held: in the
// dead-letter queue, until the operator redrives it.
func (e *expected) heldLetter(label string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.dead[label]++
}

// runFacts are what the run saw besides the EMF totals, which the totals
// must agree with.
type runFacts struct {
	reruns      int // rerun lines of this run's keys
	held        int // keys found held
	settledDone int // of them, those the operator settled done: their receipt is the operator's, no outcome counts them
}

// alwaysZero are the metrics no message of a run may count: the store's
// and the lease's troubles, which the kit's scenarios never cause.
var alwaysZero = []string{consumer.MetricStoreError, consumer.MetricLeaseLost, consumer.MetricUnconfirmed}

// reached reports whether the EMF totals count every message of the run:
// the logs may trail the invocations.
func (e *expected) reached(totals map[string]int, f runFacts) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	first := totals[consumer.MetricExecuted] + totals[consumer.MetricReconciled] + totals[consumer.MetricRerun]
	if first < e.keys-f.settledDone || first+totals[consumer.MetricDuplicate] < e.valid || totals[consumer.MetricHeld] < f.held {
		return false
	}
	for m, n := range e.atLeast {
		if totals[m] < n {
			return false
		}
	}
	return true
}

// checkTotals: each key once Executed, Reconciled or Rerun (but those the
// operator settled done, whose copies are Duplicate); Reconciled only with
// a Reconcile, Rerun only under retry, Held only under hold, each at most
// once per key with an unknown outcome; Rerun as often as the rerun lines
// say, Held at least once per held key; every valid message done; each
// dead letter's metric at least once per message; nothing in alwaysZero.
// Failed, Mismatch, Rejected and Held count a message once per receive:
// at least, not exactly.
func (e *expected) checkTotals(totals map[string]int, f runFacts) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var errs []error
	executed, reconciled, rerun, held := totals[consumer.MetricExecuted], totals[consumer.MetricReconciled], totals[consumer.MetricRerun], totals[consumer.MetricHeld]
	if got, want := executed+reconciled+rerun, e.keys-f.settledDone; got != want {
		note := ""
		if f.settledDone > 0 {
			note = fmt.Sprintf(", but the %d the operator settled done", f.settledDone)
		}
		errs = append(errs, fmt.Errorf("%s: %s + %s + %s = %d, want %d (one per key applied%s)",
			e.p, consumer.MetricExecuted, consumer.MetricReconciled, consumer.MetricRerun, got, want, note))
	}
	switch {
	case reconciled > 0 && !e.p.reconcile:
		errs = append(errs, fmt.Errorf("%s: %s = %d, want 0 (no Reconcile)", e.p, consumer.MetricReconciled, reconciled))
	case reconciled > e.unknown:
		errs = append(errs, fmt.Errorf("%s: %s = %d, want at most %d (one per key left with an unknown outcome)", e.p, consumer.MetricReconciled, reconciled, e.unknown))
	}
	switch {
	case rerun > 0 && !e.p.mayRerun():
		errs = append(errs, fmt.Errorf("%s: %s = %d, want 0 (this configuration never runs an effect again)", e.p, consumer.MetricRerun, rerun))
	case rerun > e.unknown:
		errs = append(errs, fmt.Errorf("%s: %s = %d, want at most %d (one per key left with an unknown outcome)", e.p, consumer.MetricRerun, rerun, e.unknown))
	case rerun != f.reruns:
		errs = append(errs, fmt.Errorf("%s: %s = %d, but %d rerun lines of this run's keys in the log", e.p, consumer.MetricRerun, rerun, f.reruns))
	}
	switch {
	case held > 0 && !e.p.mayHold():
		errs = append(errs, fmt.Errorf("%s: %s = %d, want 0 (this configuration never holds a key)", e.p, consumer.MetricHeld, held))
	case held < f.held:
		errs = append(errs, fmt.Errorf("%s: %s = %d, want at least %d (one per key found held)", e.p, consumer.MetricHeld, held, f.held))
	}
	if got := executed + totals[consumer.MetricDuplicate] + reconciled + rerun; got < e.valid {
		errs = append(errs, fmt.Errorf("%s + %s + %s + %s = %d, want at least %d (every valid message)",
			consumer.MetricExecuted, consumer.MetricDuplicate, consumer.MetricReconciled, consumer.MetricRerun, got, e.valid))
	}
	for _, m := range slices.Sorted(maps.Keys(e.atLeast)) {
		if totals[m] < e.atLeast[m] {
			errs = append(errs, fmt.Errorf("%s = %d, want at least %d", m, totals[m], e.atLeast[m]))
		}
	}
	for _, m := range alwaysZero {
		if totals[m] != 0 {
			errs = append(errs, fmt.Errorf("%s = %d, want 0", m, totals[m]))
		}
	}
	return errors.Join(errs...)
}

// checkDead: every message the scenarios sent to the dead-letter queue
// is there, and no other of the run's. A label there more often than it
// was sent is not the consumer's doing — a consumer cannot add messages
// to a queue — but SQS's, at least once: a send stored twice, as when the
// SDK retries a SendMessageBatch whose reply was lost (seen on a loaded
// LocalStack: both entries of one batch twice in the source queue and in
// the dead-letter queue). surplus names those.
func (e *expected) checkDead(got map[string]int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var errs []error
	for _, l := range slices.Sorted(maps.Keys(e.dead)) {
		if got[l] < e.dead[l] {
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

// surplus lists the expected labels in the dead-letter queue more often
// than sent (see checkDead), as "label: got, sent want"; none is "".
func (e *expected) surplus(got map[string]int) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var more []string
	for _, l := range slices.Sorted(maps.Keys(e.dead)) {
		if got[l] > e.dead[l] {
			more = append(more, fmt.Sprintf("%s: %d, sent %d", l, got[l], e.dead[l]))
		}
	}
	return strings.Join(more, "; ")
}
