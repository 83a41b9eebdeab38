package chaos

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestReruns: a rerun is the retry policy's; under hold and in
// transactional mode it is never allowed, and under reconcile only where
// the partner could not answer the lookup (its outage, up to a lease
// before the rerun was logged). Under retry a key applied twice needs a
// rerun counted, unless a kill of its invocation may have taken the log
// line with it.
func TestReruns(t *testing.T) {
	at := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	rerun := func(d time.Duration, key string) Window {
		return Window{At: at.Add(d), Outcome: Rerun, RecordKey: "consumer#h" + key[len(key)-1:]}
	}
	outage := [2]time.Time{at, at.Add(time.Minute)}
	for _, c := range []struct {
		name   string
		policy string
		tx     bool
		reruns []Window
		down   [2]time.Time
		want   string // the problem, "" none
	}{
		{"retry", PolicyRetry, false, []Window{rerun(0, "o-1")}, [2]time.Time{}, ""},
		{"hold", PolicyHold, false, []Window{rerun(0, "o-1")}, outage, "at-most-once (hold): 1 keys rerun, want none: o-1"},
		{"transactional", "", true, []Window{rerun(0, "o-1")}, [2]time.Time{}, "transactional mode: 1 keys rerun"},
		{"reconcile, no outage", PolicyReconcile, false, []Window{rerun(0, "o-1")}, [2]time.Time{}, "reconcile policy: 1 keys rerun while the partner answered every lookup"},
		{"reconcile, in the outage", PolicyReconcile, false, []Window{rerun(30*time.Second, "o-1")}, outage, ""},
		{"reconcile, a lease after the outage", PolicyReconcile, false, []Window{rerun(time.Minute+5*time.Second, "o-1")}, outage, ""},
		{"reconcile, before the outage", PolicyReconcile, false, []Window{rerun(-time.Second, "o-1")}, outage, "reconcile policy: 1 keys rerun"},
		{"reconcile, long after the outage", PolicyReconcile, false, []Window{rerun(2*time.Minute, "o-2"), rerun(30*time.Second, "o-1")}, outage, "reconcile policy: 1 keys rerun while the partner answered every lookup (only a reconcile that could not tell may rerun): o-2"},
	} {
		ev := evidence(map[string]int{"o-1": 1, "o-2": 1, "o-3": 1, "o-4": 1, "o-5": 1}, poisonDead, malformedDead)
		ev.Policy, ev.Reruns, ev.PartnerDown, ev.Lease = c.policy, c.reruns, c.down, 10*time.Second
		if c.tx {
			ev.LeaseMode = false
		}
		a := Settle(ev)
		p := a.Problems()
		switch {
		case c.want == "" && len(p) != 0:
			t.Errorf("%s: problems %q, want none", c.name, p)
		case c.want != "" && (len(p) != 1 || !strings.Contains(p[0], c.want)):
			t.Errorf("%s: problems %q, want one with %q", c.name, p, c.want)
		}
		if a.Reruns != len(c.reruns) {
			t.Errorf("%s: %d reruns counted, want %d", c.name, a.Reruns, len(c.reruns))
		}
	}

	ev := doubled(PolicyRetry)
	ev.Applied["o-3"] = 1
	ev.Reruns = ev.Reruns[:1] // o-2's rerun not counted
	if p := Settle(ev).Problems(); len(p) != 1 || !strings.Contains(p[0], "at-least-once (retry): 1 keys applied more than once without a rerun counted, none of their invocations killed: o-2") {
		t.Errorf("retry, o-2 doubled without a rerun: problems %q", p)
	}
	ev.Events = []Event{{At: time.Date(2026, 1, 1, 10, 0, 1, 0, time.UTC), Kind: EventKill, Point: PointAfterEffect, Key: "o-2", Pool: "consumer", Batch: []string{"o-2"}}}
	a := Settle(ev)
	if p := a.Problems(); len(p) != 0 {
		t.Errorf("retry, o-2's rerun killed with its invocation: problems %q, want none", p)
	}
	for _, d := range a.Doubled {
		if d.Key == "o-1" && !slices.ContainsFunc(d.Causes, func(c Cause) bool { return c.Class == ClassRerun }) {
			t.Errorf("o-1's causes %+v: want its rerun among them", d.Causes)
		}
	}
}
