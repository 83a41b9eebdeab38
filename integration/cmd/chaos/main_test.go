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

// TestPerProcess: -per-process is a number for every run, or run=N for
// some (the others 1); a run it names must be one of those asked for.
func TestPerProcess(t *testing.T) {
	runs := options{modes: []string{consumer.ModeLease, consumer.ModeTransactional}, policies: []string{chaos.PolicyReconcile, chaos.PolicyHold}}.runs()
	for _, c := range []struct {
		spec string
		want []int // per run: lease/reconcile, lease/hold, transactional
		bad  bool
	}{
		{spec: "1", want: []int{1, 1, 1}},
		{spec: "8", want: []int{8, 8, 8}},
		{spec: "lease/reconcile=8", want: []int{8, 1, 1}},
		{spec: "lease/reconcile=8, transactional=4", want: []int{8, 1, 4}},
		{spec: "0", bad: true},
		{spec: "lease/reconcile", bad: true},
		{spec: "lease/reconcile=0", bad: true},
		{spec: "lease/retry=8", bad: true}, // not a run asked for
	} {
		p, err := parsePerProcess(c.spec)
		if err == nil {
			err = p.check(runs)
		}
		if c.bad {
			if err == nil {
				t.Errorf("%q: accepted", c.spec)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.spec, err)
			continue
		}
		var got []int
		for _, r := range runs {
			got = append(got, p.of(r.name()))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%q: %v, want %v", c.spec, got, c.want)
		}
	}
}
