package main

import (
	"slices"
	"testing"

	"github.com/exactlyonce/sqsidem/integration/internal/chaos"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// TestRuns: lease mode runs once per policy, transactional mode once.
func TestRuns(t *testing.T) {
	o := options{modes: []string{consumer.ModeLease, consumer.ModeTransactional}, policies: chaos.Policies()}
	got := names(o.runs())
	want := []string{"lease/reconcile", "lease/hold", "lease/retry", "transactional"}
	if !slices.Equal(got, want) {
		t.Fatalf("runs %v, want %v", got, want)
	}
	o.modes = []string{consumer.ModeTransactional}
	if got := names(o.runs()); !slices.Equal(got, []string{"transactional"}) {
		t.Fatalf("transactional only: runs %v", got)
	}
}
