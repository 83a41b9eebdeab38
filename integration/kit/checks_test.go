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
	err := e.checkDead(map[string]int{"mismatch-00-v1": 2, "dup-03-v0": 1})
	for _, want := range []string{"mismatch-00-v1: 2 in the dead-letter queue, want 1", "malformed-00-v0: 0", "dup-03-v0: 1 in the dead-letter queue, want none"} {
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
