package kit

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

func TestExpectedTotals(t *testing.T) {
	e := newExpected()
	e.sent(5, 15)
	e.sent(1, 1)
	e.deadLetter("mismatch-00-v1", consumer.MetricMismatch)
	e.deadLetter("keyless-text", consumer.MetricRejected)
	e.deadLetter("keyless-json", consumer.MetricRejected)
	good := map[string]int{consumer.MetricExecuted: 6, consumer.MetricDuplicate: 12, consumer.MetricMismatch: 3, consumer.MetricRejected: 6, consumer.MetricInProgress: 1}
	for _, tc := range []struct {
		name    string
		change  map[string]int
		reached bool
		err     string // in checkTotals' error; "" for none
	}{
		{name: "every message counted", reached: true},
		{name: "logs trail", change: map[string]int{consumer.MetricDuplicate: 5}, err: "want at least 16"},
		{name: "a dead letter's receives not all logged", change: map[string]int{consumer.MetricRejected: 1}, err: "Rejected = 1, want at least 2"},
		{name: "an effect twice", change: map[string]int{consumer.MetricExecuted: 7}, reached: true, err: "Executed = 7, want 6"},
		{name: "a receipt lost", change: map[string]int{consumer.MetricUnconfirmed: 1}, reached: true, err: "Unconfirmed = 1, want 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			totals := map[string]int{}
			for m, n := range good {
				totals[m] = n
			}
			for m, n := range tc.change {
				totals[m] = n
			}
			if got := e.reached(totals); got != tc.reached {
				t.Errorf("reached = %t, want %t", got, tc.reached)
			}
			err := e.checkTotals(totals)
			if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("checkTotals = %v, want %q", err, tc.err)
			}
		})
	}
}

func TestExpectedDead(t *testing.T) {
	e := newExpected()
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

func TestTimesEach(t *testing.T) {
	if err := timesEach(map[string]int{"a": 1, "b": 1}, []string{"a", "b"}, 1); err != nil {
		t.Error(err)
	}
	err := timesEach(map[string]int{"a": 2}, []string{"a", "b"}, 1)
	if err == nil || !strings.Contains(err.Error(), "key a applied 2 times") || !strings.Contains(err.Error(), "key b applied 0 times") {
		t.Errorf("timesEach = %v, want a twice and b never", err)
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

// TestExpectedTotalsWithFaults: a poison message (Failed on each receive)
// and two keys whose first receive crashed, in lease mode (the key crashed
// after its effect may be Reconciled), transactional mode (none may) and
// lease mode with the policy hold (a crashed key may be Held instead).
func TestExpectedTotalsWithFaults(t *testing.T) {
	newRun := func(mode string, hold bool) *expected {
		e := newExpected()
		e.sent(5, 15)
		e.deadLetter("poison-00-v0", consumer.MetricFailed)
		p := faultPlan{mode: mode, unknown: consumer.UnknownRetry}
		if hold {
			p.unknown = consumer.UnknownHold
		}
		for _, point := range []string{consumer.FaultCrashBefore, consumer.FaultCrashAfter} {
			e.crash(p.reconcilable(point), p.holds())
		}
		return e
	}
	const (
		executed   = consumer.MetricExecuted
		duplicate  = consumer.MetricDuplicate
		reconciled = consumer.MetricReconciled
		held       = consumer.MetricHeld
		failed     = consumer.MetricFailed
	)
	for _, tc := range []struct {
		name    string
		mode    string
		hold    bool
		totals  map[string]int
		reached bool
		err     string // in checkTotals' error; "" for none
	}{
		{name: "lease: one executed, one reconciled", mode: consumer.ModeLease,
			totals: map[string]int{executed: 6, reconciled: 1, duplicate: 10, failed: 3}, reached: true},
		{name: "lease without Reconcile: both executed", mode: consumer.ModeLease,
			totals: map[string]int{executed: 7, duplicate: 10, failed: 3}, reached: true},
		{name: "transactional: both executed", mode: consumer.ModeTransactional,
			totals: map[string]int{executed: 7, duplicate: 10, failed: 3}, reached: true},
		{name: "transactional never reconciles", mode: consumer.ModeTransactional,
			totals: map[string]int{executed: 6, reconciled: 1, duplicate: 10, failed: 3}, reached: true,
			err: "Reconciled = 1, want at most 0"},
		{name: "only the crash after the effect may be reconciled", mode: consumer.ModeLease,
			totals: map[string]int{executed: 5, reconciled: 2, duplicate: 10, failed: 3}, reached: true,
			err: "Reconciled = 2, want at most 1"},
		{name: "a crashed key not counted yet", mode: consumer.ModeLease,
			totals: map[string]int{executed: 6, duplicate: 10, failed: 3},
			err:    "Executed + Reconciled = 6, want 7"},
		{name: "a crashed key counted twice", mode: consumer.ModeLease,
			totals: map[string]int{executed: 7, reconciled: 1, duplicate: 10, failed: 3}, reached: true,
			err: "Executed + Reconciled = 8, want 7"},
		{name: "a duplicate not logged yet", mode: consumer.ModeTransactional,
			totals: map[string]int{executed: 7, duplicate: 9, failed: 3},
			err:    "Executed + Duplicate + Reconciled = 16, want at least 17"},
		{name: "the poison message's failures not logged", mode: consumer.ModeLease,
			totals: map[string]int{executed: 7, duplicate: 10},
			err:    "Failed = 0, want at least 1"},
		{name: "held without the policy hold", mode: consumer.ModeLease,
			totals: map[string]int{executed: 6, held: 2, duplicate: 10, failed: 3},
			err:    "Held = 2, want 0"},
		{name: "hold: both crashed keys held", mode: consumer.ModeLease, hold: true,
			totals: map[string]int{executed: 5, held: 4, duplicate: 10, failed: 3}, reached: true},
		{name: "hold: one held, one reconciled", mode: consumer.ModeLease, hold: true,
			totals: map[string]int{executed: 5, reconciled: 1, held: 2, duplicate: 10, failed: 3}, reached: true},
		{name: "hold: no key held", mode: consumer.ModeLease, hold: true,
			totals: map[string]int{executed: 6, reconciled: 1, held: 1, duplicate: 10, failed: 3}, reached: true,
			err: "Held = 1, want 0"},
		{name: "hold: a crashed key neither done nor held", mode: consumer.ModeLease, hold: true,
			totals: map[string]int{executed: 5, held: 1, duplicate: 10, failed: 3},
			err:    "Executed + Reconciled = 5, want 6 (one per key applied, one per key whose first receive crashed, but 1 held)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newRun(tc.mode, tc.hold)
			if got := e.reached(tc.totals); got != tc.reached {
				t.Errorf("reached = %t, want %t", got, tc.reached)
			}
			err := e.checkTotals(tc.totals)
			if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("checkTotals = %v, want %q", err, tc.err)
			}
		})
	}
}
