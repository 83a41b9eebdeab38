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
// subtests as they send. It is safe for concurrent use.
type expected struct {
	mu      sync.Mutex
	applied int            // keys whose effect takes place, once each
	valid   int            // valid messages sent, copies included: each Executed or Duplicate (crashed: see crash)
	dead    map[string]int // labels that end in the dead-letter queue, once each
	atLeast map[string]int // metric -> the least it counts (Mismatch, Rejected, Failed)

	// Keys whose message's first receive crashed the function (crash).
	crashed      int
	reconcilable int  // of them, those whose next attempt may count Reconciled
	holdable     bool // their next attempt may hold them instead (Held)
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

// crash adds a key sent alone in one valid message whose first receive
// crashes the function. That receive writes no EMF line (the process
// ends before the batch's line); the attempt after it, once the crashed
// lease has ended, counts the key once: Executed (transactional mode, a
// crash before the effect, or lease mode running the effect again),
// Reconciled when reconcilable (lease mode, a crash after the effect, the
// effect's Reconcile saying it took place), or, when holdable (lease mode,
// IDEM_UNKNOWN_OUTCOME=hold, no Reconcile), Held on each receive left,
// the key parked, its message dead-lettered: the crash scenario fails on
// that, not the count.
func (e *expected) crash(reconcilable, holdable bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.crashed++
	e.valid++
	if reconcilable {
		e.reconcilable++
	}
	e.holdable = e.holdable || holdable
}

// neverCounted are the metrics no message of a run may count: the
// store's and the lease's troubles, which the kit's scenarios never cause
// (Held only as crash allows).
var neverCounted = []string{consumer.MetricStoreError, consumer.MetricLeaseLost, consumer.MetricUnconfirmed, consumer.MetricHeld}

// held is how many crashed keys the totals count as Held rather than done:
// the crashed keys Executed and Reconciled leave, when holdable, else 0.
func (e *expected) held(totals map[string]int) int {
	if !e.holdable {
		return 0
	}
	done := totals[consumer.MetricExecuted] + totals[consumer.MetricReconciled] - e.applied
	return min(max(e.crashed-done, 0), e.crashed, totals[consumer.MetricHeld])
}

// reached reports whether the EMF totals count every message of the run:
// the logs may trail the invocations.
func (e *expected) reached(totals map[string]int) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	held := e.held(totals)
	done := totals[consumer.MetricExecuted] + totals[consumer.MetricReconciled]
	if done+held < e.applied+e.crashed || done+totals[consumer.MetricDuplicate]+held < e.valid {
		return false
	}
	for m, n := range e.atLeast {
		if totals[m] < n {
			return false
		}
	}
	return true
}

// checkTotals: one Executed per applied key; each crashed key counted
// once by Executed or Reconciled (Reconciled no more than reconcilable
// allows; or by at least one Held when holdable); Executed, Duplicate and
// Reconciled together at least the valid messages; each dead letter's
// metric at least once per message; and nothing in neverCounted, but the
// Held of held crashed keys. Failed, Mismatch and Rejected count a message
// once per receive: at least, not exactly.
func (e *expected) checkTotals(totals map[string]int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var errs []error
	executed, reconciled := totals[consumer.MetricExecuted], totals[consumer.MetricReconciled]
	held := e.held(totals)
	if e.crashed == 0 {
		if executed != e.applied {
			errs = append(errs, fmt.Errorf("%s = %d, want %d (one per key applied)", consumer.MetricExecuted, executed, e.applied))
		}
	} else if got, want := executed+reconciled, e.applied+e.crashed-held; got != want {
		errs = append(errs, fmt.Errorf("%s + %s = %d, want %d (one per key applied, one per key whose first receive crashed%s)",
			consumer.MetricExecuted, consumer.MetricReconciled, got, want, heldNote(held)))
	}
	if reconciled > e.reconcilable {
		errs = append(errs, fmt.Errorf("%s = %d, want at most %d (a key whose attempt crashed after its effect, in lease mode)",
			consumer.MetricReconciled, reconciled, e.reconcilable))
	}
	if got, want := executed+totals[consumer.MetricDuplicate]+reconciled, e.valid-held; got < want {
		errs = append(errs, fmt.Errorf("%s + %s + %s = %d, want at least %d (every valid message)",
			consumer.MetricExecuted, consumer.MetricDuplicate, consumer.MetricReconciled, got, want))
	}
	for _, m := range slices.Sorted(maps.Keys(e.atLeast)) {
		if totals[m] < e.atLeast[m] {
			errs = append(errs, fmt.Errorf("%s = %d, want at least %d", m, totals[m], e.atLeast[m]))
		}
	}
	for _, m := range neverCounted {
		if totals[m] != 0 && (m != consumer.MetricHeld || held == 0) {
			errs = append(errs, fmt.Errorf("%s = %d, want 0", m, totals[m]))
		}
	}
	return errors.Join(errs...)
}

// heldNote names the crashed keys counted as held.
func heldNote(held int) string {
	if held == 0 {
		return ""
	}
	return fmt.Sprintf(", but %d held", held)
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
