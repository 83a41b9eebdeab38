package chaos

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/integration/internal/system"
)

// evidence is a run of five keys, one poison key and one malformed
// message, with the probe's answer and the DLQ given.
func evidence(applied map[string]int, dead ...system.DeadLetter) Evidence {
	plan := Plan{Keys: []string{"o-1", "o-2", "o-3", "o-4", "o-5", "p-1"}, Poison: map[string]bool{"p-1": true}, Malformed: 1}
	at := map[string]time.Time{}
	for k := range applied {
		at[k] = time.Unix(100, 0)
	}
	return Evidence{Plan: plan, Applied: applied, AppliedAt: at, DeadLetters: dead, MalformedIDs: []string{"m-1"},
		KeyOf: map[string]string{"consumer#h1": "o-1", "consumer#h2": "o-2", "consumer#h3": "o-3", "consumer#h4": "o-4"}, LeaseMode: true}
}

var poisonDead = system.DeadLetter{MessageID: "msg-p", Key: "p-1", Reason: "consumer: injected fault: poison key fails every time"}
var malformedDead = system.DeadLetter{MessageID: "m-1", Reason: "sqsbatch: key: sqsbatch: body is not a JSON object: unexpected end of JSON input"}

func TestSettleEveryKeyAccountedFor(t *testing.T) {
	ev := evidence(map[string]int{"o-1": 1, "o-2": 1, "o-3": 1, "o-4": 1},
		poisonDead, malformedDead, system.DeadLetter{MessageID: "msg-5", Key: "o-5", Reason: "effect: ledger update: throttled"})
	a := Settle(ev)
	if a.Keys != 6 || a.Applied != 4 || len(a.Lost) != 0 || a.DoubleEffects != 0 {
		t.Fatalf("account %+v", a)
	}
	if !slices.Equal(a.DLQKeys, []string{"o-5"}) || len(a.DLQ) != 3 {
		t.Fatalf("DLQ %v, plain keys in it %v", a.DLQ, a.DLQKeys)
	}
	if p := a.Problems(); len(p) != 0 {
		t.Fatalf("problems %v", p)
	}
}

func TestSettleLost(t *testing.T) {
	ev := evidence(map[string]int{"o-1": 1, "o-2": 1, "o-3": 1}, poisonDead)
	ev.Unpublished = []string{"o-4"}
	a := Settle(ev)
	if !slices.Equal(a.Lost, []string{"o-5", "malformed message m-1"}) || !slices.Equal(a.Unpublished, []string{"o-4"}) {
		t.Fatalf("lost %v, unpublished %v", a.Lost, a.Unpublished)
	}
	if p := a.Problems(); len(p) != 2 {
		t.Fatalf("problems %v: want lost and unpublished", p)
	}
}

func TestSettleDoubleEffectCauses(t *testing.T) {
	at := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	ev := evidence(map[string]int{"o-1": 2, "o-2": 2, "o-3": 2, "o-4": 3, "o-5": 1}, poisonDead, malformedDead)
	ev.Events = []Event{
		{At: at, Kind: EventKill, Point: PointAfterEffect, Key: "o-1", Pool: "consumer", Batch: []string{"o-1", "o-2"}},
		{At: at, Kind: EventTimeout, Pool: "consumer", Batch: []string{"o-2"}},
	}
	ev.Windows = []Window{{At: at, Outcome: "unconfirmed", RecordKey: "consumer#h3", Error: "idem: effect ran, receipt not written"}}
	// The attempt that took the lapsed lease over ran it again: a rerun.
	ev.Reruns = []Window{{At: at.Add(time.Second), Outcome: Rerun, RecordKey: "consumer#h3"}}
	ev.Policy = PolicyRetry
	a := Settle(ev)
	if a.DoubleEffects != 5 || len(a.Doubled) != 4 {
		t.Fatalf("double effects %d in %d keys, want 5 in 4", a.DoubleEffects, len(a.Doubled))
	}
	first := map[string]string{}
	for _, d := range a.Doubled {
		if len(d.Causes) > 0 {
			first[d.Key] = d.Causes[0].Class
		}
	}
	want := map[string]string{"o-1": ClassKillAfter, "o-2": ClassKillBatch, "o-3": ClassUnconfirmed}
	for id, class := range want {
		if first[id] != class {
			t.Errorf("%s: first cause %q, want %q", id, first[id], class)
		}
	}
	if !slices.Equal(a.Unexplained, []string{"o-4"}) {
		t.Fatalf("unexplained %v, want o-4", a.Unexplained)
	}
	if p := a.Problems(); len(p) != 1 || !strings.Contains(p[0], "o-4") {
		t.Fatalf("lease mode problems %v: want only the unexplained o-4", p)
	}
	ev.LeaseMode, ev.Policy, ev.Reruns = false, "", nil
	if p := Settle(ev).Problems(); len(p) != 1 || !strings.Contains(p[0], "transactional mode: 5 double effects") {
		t.Fatalf("transactional problems %v: want every double effect", p)
	}
	var counted int
	for _, c := range a.ByCause() {
		counted += c.Count
	}
	if counted != 5 {
		t.Fatalf("by cause %v: want the 5 double effects", a.ByCause())
	}
}

func TestSettleEffectTimeoutWindow(t *testing.T) {
	ev := evidence(map[string]int{"o-1": 1, "o-2": 1, "o-3": 2, "o-4": 1, "o-5": 1}, poisonDead, malformedDead)
	ev.Windows = []Window{{Outcome: EffectTimeout, RecordKey: "consumer#h3", Error: "effect: ledger update: context deadline exceeded"}}
	a := Settle(ev)
	if len(a.Unexplained) != 0 || a.Doubled[0].Causes[0].Class != ClassEffectLate {
		t.Fatalf("doubled %+v", a.Doubled)
	}
}

func TestSettleDeadLetterReasons(t *testing.T) {
	ev := evidence(map[string]int{"o-1": 1, "o-2": 1, "o-3": 1},
		poisonDead, malformedDead, system.DeadLetter{MessageID: "msg-4", Key: "o-4"}, system.DeadLetter{MessageID: "msg-5", Key: "o-5"})
	ev.Events = []Event{{Kind: EventTimeout, Batch: []string{"o-4"}}, {Kind: EventTimeout, Batch: []string{"o-4"}}}
	a := Settle(ev)
	var reasons []string
	for _, r := range a.DLQ {
		reasons = append(reasons, r.Reason)
	}
	if !slices.Contains(reasons, "never answered: every delivery was killed (timeout)") || !slices.Contains(reasons, NoReason) {
		t.Fatalf("reasons %q", reasons)
	}
	if p := a.Problems(); len(p) != 1 || !strings.Contains(p[0], "without a logged reason") {
		t.Fatalf("problems %v: want the one dead letter nothing explains", p)
	}
}

// TestSettleDeadLetterClasses: a dead letter is a store failure when its
// last logged failure was the store's and nothing killed a later receive.
func TestSettleDeadLetterClasses(t *testing.T) {
	at := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	storeFailed := "idem: commit consumer#…: idem: store failed: context deadline exceeded"
	ev := evidence(map[string]int{"o-1": 1}, poisonDead, malformedDead,
		system.DeadLetter{MessageID: "msg-3", Key: "o-3", Reason: storeFailed},
		system.DeadLetter{MessageID: "msg-4", Key: "o-4", Reason: storeFailed},
		system.DeadLetter{MessageID: "msg-5", Key: "o-5", Reason: "effect: ledger update: throttled"})
	ev.Failures = map[string]Failure{
		"msg-3": {at, "store_error"},
		"msg-4": {at, "store_error"}, // its last receive was killed, later
		"msg-5": {at, "failed"},
		"msg-p": {at, "failed"},
		"m-1":   {at, "rejected"},
	}
	ev.Events = []Event{
		{At: at.Add(-time.Minute), Kind: EventKill, Batch: []string{"o-3"}},
		{At: at.Add(time.Minute), Kind: EventKill, Batch: []string{"o-4"}},
	}
	want := map[string]int{DeadPoison: 1, DeadMalformed: 1, DeadStore: 1, DeadOther: 2}
	if got := Settle(ev).DLQByClass; !maps.Equal(got, want) {
		t.Fatalf("DLQ by class %v, want %v", got, want)
	}
}

func TestSettlePoisonApplied(t *testing.T) {
	ev := evidence(map[string]int{"o-1": 1, "o-2": 1, "o-3": 1, "o-4": 1, "o-5": 1, "p-1": 1}, malformedDead)
	if a := Settle(ev); !slices.Equal(a.PoisonApplied, []string{"p-1"}) || len(a.Problems()) != 1 {
		t.Fatalf("poison applied %v, problems %v", a.PoisonApplied, a.Problems())
	}
}

func TestLatency(t *testing.T) {
	ev := evidence(map[string]int{}, poisonDead, malformedDead)
	ev.SentAt = map[string]time.Time{}
	base := time.Unix(1000, 0)
	for i, k := range ev.Plan.Keys[:5] {
		ev.Applied[k], ev.AppliedAt[k] = 1, base.Add(time.Duration(i+1)*100*time.Millisecond)
		ev.SentAt[k] = base
	}
	l := Settle(ev).Latency
	if l.N != 5 || l.P50 != 300*time.Millisecond || l.P99 != 500*time.Millisecond || l.Max != 500*time.Millisecond {
		t.Fatalf("latency %+v", l)
	}
}

func TestPercentiles(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	p := PercentilesOf(ds)
	if p.N != 100 || p.P50 != 50*time.Millisecond || p.P99 != 99*time.Millisecond || p.Max != 100*time.Millisecond {
		t.Fatalf("%+v", p)
	}
	if ds[0] != 100*time.Millisecond {
		t.Fatal("PercentilesOf sorted its argument")
	}
	if (PercentilesOf(nil) != Percentiles{}) {
		t.Fatal("empty input")
	}
}

func TestSettleRunStoppedEarly(t *testing.T) {
	ev := evidence(map[string]int{"o-1": 1}, malformedDead)
	ev.Handed = map[string]time.Time{"o-1": {}, "o-2": {}}
	a := Settle(ev)
	if a.NotSent != 4 || a.Keys != 2 || !slices.Equal(a.Lost, []string{"o-2"}) {
		t.Fatalf("not sent %d, keys %d, lost %v; want 4, 2, [o-2]", a.NotSent, a.Keys, a.Lost)
	}
}

func TestTidy(t *testing.T) {
	in := "effect: ledger update: timeout\nidem: release: dynamostore: release \"consumer#7f3bafc03fac90e26e9726a1de57ccb64052b10c97bc96deb418cefa87f9b9fd\": canceled"
	if got, want := Tidy(in), `effect: ledger update: timeout / idem: release: dynamostore: release "consumer#…": canceled`; got != want {
		t.Errorf("Tidy = %q, want %q", got, want)
	}
	a := Tidy("idem: in progress elsewhere: consumer#91cfa87bab315f50942ad8fdd98fd280bde2ccda12e46e1fda60fde87943f0ab leased for another 1.924s")
	b := Tidy("idem: in progress elsewhere: consumer#bb3c2fabd8c3809b0e22d68a5abadc02763060ec397a34d3a83de0b511e9ad0f leased for another 2.152s")
	if a != b || a != "idem: in progress elsewhere: consumer#… (leased)" {
		t.Errorf("in-progress reasons %q and %q: want them the same", a, b)
	}
}
