package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// perProcess is -per-process: how many invocations one consumer process
// runs at once, for every run or by run.
type perProcess struct {
	all   int            // 0: not given for every run
	byRun map[string]int // run name → invocations per process
}

// parsePerProcess reads "8" (every run) or "lease/reconcile=8,transactional=4"
// (those runs; the others 1).
func parsePerProcess(s string) (perProcess, error) {
	var p perProcess
	s = strings.TrimSpace(s)
	if s == "" {
		return p, nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n < 1 {
			return p, errors.New("must be at least 1")
		}
		p.all = n
		return p, nil
	}
	p.byRun = map[string]int{}
	for _, part := range strings.Split(s, ",") {
		name, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.Atoi(v)
		if !ok || name == "" || err != nil || n < 1 {
			return p, fmt.Errorf("%q: want a number, or run=N for each run (e.g. lease/reconcile=8)", part)
		}
		p.byRun[name] = n
	}
	return p, nil
}

// of is the invocations per process of run name.
func (p perProcess) of(name string) int {
	if n := p.byRun[name]; n > 0 {
		return n
	}
	return max(p.all, 1)
}

// check refuses a run named that is not one of runs.
func (p perProcess) check(runs []runSpec) error {
	for name := range p.byRun {
		if !slices.ContainsFunc(runs, func(r runSpec) bool { return r.name() == name }) {
			return fmt.Errorf("-per-process: %s is not one of the runs %v", name, names(runs))
		}
	}
	return nil
}
