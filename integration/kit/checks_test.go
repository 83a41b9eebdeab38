package kit

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// The promises of the four configurations the kit tells apart.
var (
	transactional = newPromise(consumer.ModeTransactional, consumer.UnknownRetry, false)
	reconciling   = newPromise(consumer.ModeLease, consumer.UnknownRetry, true)
	retrying      = newPromise(consumer.ModeLease, consumer.UnknownRetry, false)
	holding       = newPromise(consumer.ModeLease, consumer.UnknownHold, false)
)

// TestExpectedTotals: a run of 5 keys sent 15 times, a poison message
// (Failed on each receive) and two keys whose first receive crashed,
// counted by what each configuration's promise allows: Reconciled only
// with a Reconcile, Rerun only under retry (as often as the rerun lines
// say), Held only under hold (at least once per held key), and a key
// settled done by the operator counted by no outcome of its own.
func TestExpectedTotals(t *testing.T) {
	newRun := func(p promise) *expected {
		e := newExpected(p)
		e.sent(5, 15)
		e.deadLetter("poison-00-v0", consumer.MetricFailed)
		e.uncertain(false) // crash before
		e.uncertain(false) // crash after
		return e
	}
	const (
		executed    = consumer.MetricExecuted
		duplicate   = consumer.MetricDuplicate
		reconciled  = consumer.MetricReconciled
		rerun       = consumer.MetricRerun
		held        = consumer.MetricHeld
		failed      = consumer.MetricFailed
		unconfirmed = consumer.MetricUnconfirmed
	)
	for _, tc := range []struct {
		name    string
		p       promise
		totals  map[string]int
		facts   runFacts
		reached bool
		err     string // in checkTotals' error; "" for none
	}{
		{name: "transactional: both crashed keys executed", p: transactional,
			totals: map[string]int{executed: 7, duplicate: 10, failed: 3}, reached: true},
		{name: "transactional never reconciles", p: transactional,
			totals: map[string]int{executed: 6, reconciled: 1, duplicate: 10, failed: 3}, reached: true,
			err: "exactly-once (transactional): Reconciled = 1, want 0 (no Reconcile)"},
		{name: "transactional never holds", p: transactional,
			totals: map[string]int{executed: 7, held: 1, duplicate: 10, failed: 3}, reached: true,
			err: "Held = 1, want 0 (this configuration never holds a key)"},
		{name: "reconcile: the crash after the effect reconciled", p: reconciling,
			totals: map[string]int{executed: 6, reconciled: 1, duplicate: 10, failed: 3}, reached: true},
		{name: "reconcile: more reconciled than unknown outcomes", p: reconciling,
			totals: map[string]int{executed: 4, reconciled: 3, duplicate: 10, failed: 3}, reached: true,
			err: "Reconciled = 3, want at most 2"},
		{name: "retry: both crashed keys re-run", p: retrying, facts: runFacts{reruns: 2},
			totals: map[string]int{executed: 5, rerun: 2, duplicate: 10, failed: 3}, reached: true},
		{name: "retry: the re-run metric without its lines", p: retrying, facts: runFacts{reruns: 1},
			totals: map[string]int{executed: 5, rerun: 2, duplicate: 10, failed: 3}, reached: true,
			err: "Rerun = 2, but 1 rerun lines of this run's keys in the log"},
		{name: "retry: a key applied once more than counted", p: retrying, facts: runFacts{reruns: 2},
			totals: map[string]int{executed: 6, rerun: 2, duplicate: 10, failed: 3}, reached: true,
			err: "at-least-once (retry, no reconcile): Executed + Reconciled + Rerun = 8, want 7"},
		{name: "hold: settled, one done, one not done", p: holding, facts: runFacts{held: 2, settledDone: 1},
			totals: map[string]int{executed: 6, held: 4, duplicate: 11, failed: 3}, reached: true},
		{name: "hold: a held key's receives not all logged", p: holding, facts: runFacts{held: 2, settledDone: 1},
			totals: map[string]int{executed: 6, held: 1, duplicate: 11, failed: 3},
			err:    "Held = 1, want at least 2 (one per key found held)"},
		{name: "hold: a re-run", p: holding, facts: runFacts{reruns: 1, held: 1},
			totals: map[string]int{executed: 6, rerun: 1, held: 2, duplicate: 10, failed: 3}, reached: true,
			err: "at-most-once (hold, no reconcile): Rerun = 1, want 0 (this configuration never runs an effect again)"},
		{name: "logs trail", p: transactional,
			totals: map[string]int{executed: 7, duplicate: 5, failed: 3},
			err:    "Executed + Duplicate + Reconciled + Rerun = 12, want at least 17"},
		{name: "the poison message's failures not logged", p: transactional,
			totals: map[string]int{executed: 7, duplicate: 10},
			err:    "Failed = 0, want at least 1"},
		{name: "a receipt lost", p: reconciling,
			totals: map[string]int{executed: 7, duplicate: 10, failed: 3, unconfirmed: 1}, reached: true,
			err: "Unconfirmed = 1, want 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newRun(tc.p)
			if got := e.reached(tc.totals, tc.facts); got != tc.reached {
				t.Errorf("reached = %t, want %t", got, tc.reached)
			}
			err := e.checkTotals(tc.totals, tc.facts)
			if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("checkTotals = %v, want %q", err, tc.err)
			}
		})
	}
}

func TestExpectedDead(t *testing.T) {
	e := newExpected(transactional)
	e.deadLetter("mismatch-00-v1", consumer.MetricMismatch)
	e.deadLetter("malformed-00-v0", consumer.MetricFailed)
	if err := e.checkDead(map[string]int{"mismatch-00-v1": 1, "malformed-00-v0": 1}); err != nil {
		t.Errorf("exactly the expected: %v", err)
	}
	if e.surplus(map[string]int{"mismatch-00-v1": 1, "malformed-00-v0": 1}) != "" {
		t.Error("surplus of exactly the expected is not empty")
	}
	// A send SQS stored twice (an SDK retry of its batch): both entries of
	// the batch there twice, which the consumer could not have caused.
	twice := map[string]int{"mismatch-00-v1": 2, "malformed-00-v0": 2}
	if err := e.checkDead(twice); err != nil {
		t.Errorf("a send stored twice: %v", err)
	}
	if got, want := e.surplus(twice), "malformed-00-v0: 2, sent 1; mismatch-00-v1: 2, sent 1"; got != want {
		t.Errorf("surplus = %q, want %q", got, want)
	}
	err := e.checkDead(map[string]int{"mismatch-00-v1": 2, "dup-03-v0": 1})
	for _, want := range []string{"malformed-00-v0: 0 in the dead-letter queue, want 1", "dup-03-v0: 1 in the dead-letter queue, want none"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("checkDead = %v, want it to say %q", err, want)
		}
	}
}

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		v    types.AttributeValue
		want int
		bad  bool
	}{
		{v: nil, want: 0},
		{v: &types.AttributeValueMemberN{Value: "2"}, want: 2},
		{v: &types.AttributeValueMemberS{Value: "2"}, bad: true},
	} {
		got, err := count(tc.v)
		if got != tc.want || (err != nil) != tc.bad {
			t.Errorf("count(%#v) = %d, %v; want %d (error: %t)", tc.v, got, err, tc.want, tc.bad)
		}
	}
}
