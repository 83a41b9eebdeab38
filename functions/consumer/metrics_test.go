package main

import (
	"maps"
	"slices"
	"testing"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// TestOutcomeMetrics: every outcome the library reports has its own metric,
// and every metric of the contract (which the stack alarms on and graphs)
// counts an outcome: none is always zero.
func TestOutcomeMetrics(t *testing.T) {
	for o := idem.Executed; o.String() != "unknown"; o++ {
		if _, ok := outcomeMetrics[o]; !ok {
			t.Errorf("outcome %s has no metric: it would count as Failed", o)
		}
	}
	got := slices.Sorted(maps.Values(outcomeMetrics))
	want := slices.Sorted(slices.Values(contract.OutcomeMetrics()))
	if !slices.Equal(got, want) {
		t.Errorf("metrics written %v\nwant the contract's %v", got, want)
	}
}
