package chaos

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/integration/internal/partner"
	"github.com/exactlyonce/sqsidem/integration/internal/system"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

func TestParsePolicies(t *testing.T) {
	got, err := ParsePolicies(" hold,reconcile ")
	if err != nil || !slices.Equal(got, []string{PolicyHold, PolicyReconcile}) {
		t.Fatalf("ParsePolicies = %v, %v", got, err)
	}
	for _, bad := range []string{"", "retry,retry", "reconcile,maybe"} {
		if _, err := ParsePolicies(bad); err == nil {
			t.Errorf("ParsePolicies(%q): no error", bad)
		}
	}
}

// TestPolicyEnv: reconcile is the template as it is (the Reconcile on,
// retry when it cannot tell); hold and retry drop the Reconcile, so that
// their policy carries every unknown outcome.
func TestPolicyEnv(t *testing.T) {
	for policy, want := range map[string]map[string]string{
		PolicyReconcile: {consumer.EnvUnknownOutcome: consumer.UnknownRetry, consumer.EnvFaultNoReconcile: "false"},
		PolicyHold:      {consumer.EnvUnknownOutcome: consumer.UnknownHold, consumer.EnvFaultNoReconcile: "true"},
		PolicyRetry:     {consumer.EnvUnknownOutcome: consumer.UnknownRetry, consumer.EnvFaultNoReconcile: "true"},
	} {
		if got := PolicyEnv(policy); !maps.Equal(got, want) {
			t.Errorf("%s: %v, want %v", policy, got, want)
		}
	}
}

// doubled is a lease-mode run of five keys in which o-1 was applied twice
// after the partner lost the reply of its first call, o-2 twice after the
// partner answered past the deadline (each run again by an attempt that
// logged a rerun), and o-3 twice after a call the partner refused (nothing
// applied: that explains nothing).
func doubled(policy string) Evidence {
	at := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	ev := evidence(map[string]int{"o-1": 2, "o-2": 2, "o-3": 2, "o-4": 1, "o-5": 1}, poisonDead, malformedDead)
	ev.Policy = policy
	ev.PartnerFaults = []partner.Injection{
		{At: at, Key: "o-1", Kind: partner.InjectLostReply, Applied: true},
		{At: at, Key: "o-2", Kind: partner.InjectSlow, Applied: true},
		{At: at, Key: "o-3", Kind: partner.InjectRefused},
		{At: at, Key: "o-3", Kind: partner.InjectDown},
	}
	if policy == PolicyRetry {
		ev.Reruns = []Window{{At: at.Add(time.Second), Outcome: Rerun, RecordKey: "consumer#h1"}, {At: at.Add(time.Second), Outcome: Rerun, RecordKey: "consumer#h2"}}
	}
	return ev
}

func TestSettlePartnerFaultsExplainDoubles(t *testing.T) {
	a := Settle(doubled(PolicyRetry))
	first := map[string]string{}
	for _, d := range a.Doubled {
		if len(d.Causes) > 0 {
			first[d.Key] = d.Causes[0].Class
		}
	}
	if first["o-1"] != ClassPartnerLost || first["o-2"] != ClassPartnerSlow {
		t.Fatalf("first causes %v: want the lost reply for o-1, the late answer for o-2", first)
	}
	if !slices.Equal(a.Unexplained, []string{"o-3"}) {
		t.Fatalf("unexplained %v: want o-3 (a refused call applies nothing)", a.Unexplained)
	}
	by := map[string]int{}
	for _, c := range a.ByCause() {
		by[ShortClass(c.Reason)] = c.Count
	}
	if want := map[string]int{"lost reply": 1, "slow past deadline": 1, "unexplained": 1}; !maps.Equal(by, want) {
		t.Fatalf("by cause %v, want %v", by, want)
	}
}

// TestProblemsByPolicy: the same double effects break the invariant under
// reconcile and hold and in transactional mode; under retry only the one
// no window explains does.
func TestProblemsByPolicy(t *testing.T) {
	for _, c := range []struct {
		policy string
		want   string // the problem, "" for none
	}{
		{PolicyReconcile, "reconcile policy: 3 double effects, want none: o-1 ×2 (lost reply), o-2 ×2 (slow past deadline), o-3 ×2 (unexplained)"},
		{PolicyHold, "hold policy: 3 double effects, want none"},
		{"", "reconcile policy: 3 double effects"}, // the default
		{PolicyRetry, "1 double effects no kill, freeze, lost or late reply or missing receipt explains: o-3"},
	} {
		p := Settle(doubled(c.policy)).Problems()
		if len(p) != 1 || !strings.Contains(p[0], c.want) {
			t.Errorf("%q: problems %q, want one with %q", c.policy, p, c.want)
		}
	}
	ev := doubled(PolicyRetry)
	ev.Applied["o-3"] = 1
	if p := Settle(ev).Problems(); len(p) != 0 {
		t.Errorf("retry, every double explained: problems %q, want none", p)
	}
	ev.LeaseMode, ev.Policy, ev.Reruns = false, "", nil
	if p := Settle(ev).Problems(); len(p) != 1 || !strings.Contains(p[0], "transactional mode: 2 double effects") {
		t.Errorf("transactional: problems %q", p)
	}
}

var heldReason = "idem: held: an earlier attempt's outcome is unknown: consumer#… (attempt 2): unknown outcome, no reconcile"

// held is a hold-policy run: o-1 (applied: its reply was lost) and o-2
// (never applied) held, their copies in the DLQ as held, the poison key's
// last receive held too.
func held(policy string) Evidence {
	at := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	poison := poisonDead
	poison.Reason = heldReason
	ev := evidence(map[string]int{"o-1": 1, "o-3": 1, "o-4": 1, "o-5": 1}, poison, malformedDead,
		system.DeadLetter{MessageID: "msg-1", Key: "o-1", Reason: heldReason},
		system.DeadLetter{MessageID: "msg-2", Key: "o-2", Reason: heldReason},
		system.DeadLetter{MessageID: "msg-2b", Key: "o-2", Reason: heldReason})
	ev.Policy = policy
	ev.Held = map[string]bool{"o-1": true, "o-2": true, "p-1": true}
	ev.Failures = map[string]Failure{"msg-1": {at, "held"}, "msg-2": {at, "held"}, "msg-2b": {at, "held"}, "msg-p": {at, "held"}}
	return ev
}

func TestSettleHeld(t *testing.T) {
	a := Settle(held(PolicyHold))
	if !slices.Equal(a.Held, []string{"o-1", "o-2", "p-1"}) || len(a.HeldNotDead) != 0 || a.HeldDead != 4 {
		t.Fatalf("held %v, not in the DLQ %v, held dead letters %d; want 3 keys, all in the DLQ, 4 letters", a.Held, a.HeldNotDead, a.HeldDead)
	}
	if want := map[string]int{DeadPoison: 1, DeadMalformed: 1, DeadHeld: 3}; !maps.Equal(a.DLQByClass, want) {
		t.Fatalf("DLQ by class %v, want %v", a.DLQByClass, want)
	}
	if len(a.Lost) != 0 {
		t.Fatalf("lost %v: a held key in the DLQ is accounted for", a.Lost)
	}
	if p := a.Problems(); len(p) != 0 {
		t.Fatalf("hold policy: problems %q, want none", p)
	}
}

// TestHeldOnlyUnderHold: a held key, or a dead letter that failed as held,
// breaks the invariant of every other policy; under hold, a held key must
// have its messages in the DLQ.
func TestHeldOnlyUnderHold(t *testing.T) {
	for _, policy := range []string{PolicyReconcile, PolicyRetry} {
		p := Settle(held(policy)).Problems()
		if len(p) != 2 || !strings.Contains(p[0], "3 keys held, but the policy is "+policy) || !strings.Contains(p[1], "4 dead letters failed as held") {
			t.Errorf("%s: problems %q, want the held keys and the held dead letters", policy, p)
		}
	}
	ev := held(PolicyReconcile)
	ev.LeaseMode, ev.Policy = false, ""
	if p := Settle(ev).Problems(); len(p) != 2 {
		t.Errorf("transactional: problems %q, want the held keys and the held dead letters", p)
	}
	ev = held(PolicyHold)
	ev.Held["o-4"] = true // applied, held, never dead-lettered
	p := Settle(ev).Problems()
	if len(p) != 1 || !strings.Contains(p[0], "1 held keys without a message in the DLQ nor a copy delivered straight to a consumer: o-4") {
		t.Errorf("hold, a held key not in the DLQ: problems %q", p)
	}
	// Held by the takeover of a frozen zombie (a copy the run delivered
	// itself), its message consumed by the zombie: accounted for.
	ev.Events = []Event{{Kind: EventFreeze, Point: PointAfterEffect, Key: "o-4", Batch: []string{"o-4"}}}
	if a := Settle(ev); len(a.Problems()) != 0 || !slices.Equal(a.HeldDirect, []string{"o-4"}) {
		t.Errorf("hold, held by a takeover: problems %q, held by a direct copy %v", a.Problems(), a.HeldDirect)
	}
}

func TestAppliedOnceAfterResolution(t *testing.T) {
	once, bad := appliedOnce([]string{"o-1", "o-2", "o-3", "o-4", "p-1"}, map[string]bool{"p-1": true},
		map[string]int{"o-1": 1, "o-2": 1, "o-3": 2})
	if once != 2 || !slices.Equal(bad, []string{"o-3 ×2", "o-4 ×0"}) {
		t.Fatalf("appliedOnce = %d, %q; want 2 and o-3 (twice), o-4 (never)", once, bad)
	}
	again := appliedAgain([]string{"o-1", "o-2", "o-3"}, map[string]int{"o-1": 1, "o-3": 2}, map[string]int{"o-1": 2, "o-2": 1, "o-3": 2})
	if !slices.Equal(again, []string{"o-1 ×2"}) {
		t.Fatalf("appliedAgain = %q, want o-1", again)
	}
}

func TestHeldKeys(t *testing.T) {
	h, strangers := heldKeys([]string{"consumer#a", "consumer#x"}, map[string]string{"consumer#a": "o-1", "consumer#b": "o-2"})
	if !maps.Equal(h, map[string]bool{"o-1": true}) || !slices.Equal(strangers, []string{"consumer#x"}) {
		t.Fatalf("heldKeys = %v, %v", h, strangers)
	}
}

// TestPartnerFaultsAt: the rates from the first send, and the outage
// within its window only.
func TestPartnerFaultsAt(t *testing.T) {
	r := Rates{PartnerRefuse: 0.01, PartnerLoseReply: 0.02, PartnerSlow: 0.03}
	start := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	o := Outage{After: 20 * time.Second, For: 3 * time.Second}
	want := partner.Faults{Refuse: 0.01, LoseReply: 0.02, Slow: 0.03, SlowFor: 3 * time.Second}
	for _, c := range []struct {
		at   time.Duration
		down bool
	}{{0, false}, {19 * time.Second, false}, {20 * time.Second, true}, {22 * time.Second, true}, {23 * time.Second, false}} {
		w := want
		w.Down = c.down
		if got := partnerFaults(r, 3*time.Second, o, start, start.Add(c.at)); got != w {
			t.Errorf("+%s: %+v, want %+v", c.at, got, w)
		}
	}
	if got := partnerFaults(r, time.Second, Outage{}, start, start.Add(time.Hour)); got.Down {
		t.Error("no outage asked for, and the partner is down")
	}
}

// TestPartnerChaos drives a real partner: the rates are set, the outage
// comes and goes, and Stop turns everything off. No timing is asserted:
// it waits for each state.
func TestPartnerChaos(t *testing.T) {
	srv, err := partner.Start(partner.IgnoreKey())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	pc := &PartnerChaos{Server: srv, Rates: Rates{PartnerRefuse: 0.5}, SlowFor: time.Second,
		Outage: Outage{After: 50 * time.Millisecond, For: 100 * time.Millisecond}, Tick: 5 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); pc.Run(ctx, time.Now()) }()
	waitFor(t, "the outage to end", func() bool { _, to := pc.Down(); return !to.IsZero() })
	if from, to := pc.Down(); !to.After(from) || from.IsZero() {
		t.Fatalf("outage %s – %s", from, to)
	}
	if f := srv.Faults(); f.Down || f.Refuse != 0.5 || f.SlowFor != time.Second {
		t.Fatalf("after the outage: %+v", f)
	}
	pc.Stop()
	<-done
	if f := srv.Faults(); f != (partner.Faults{}) {
		t.Fatalf("after Stop: %+v, want none", f)
	}
}

// waitFor polls cond for up to a minute: generous on a loaded machine.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
