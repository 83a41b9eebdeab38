package kit

import (
	"fmt"
	"strings"
	"testing"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

func TestPromiseString(t *testing.T) {
	for _, tc := range []struct {
		p    promise
		want string
	}{
		{transactional, "exactly-once (transactional)"},
		{reconciling, "exactly-once (lease, reconcile; what it cannot tell: retry)"},
		{retrying, "at-least-once (retry, no reconcile)"},
		{holding, "at-most-once (hold, no reconcile)"},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.p, got, tc.want)
		}
	}
}

// TestJudge: each configuration passes a key that came to what it
// promises, and fails one that did not, with a message naming the
// promise — among them the consumers the issue names: a hold consumer
// that re-runs, a retry consumer that runs three times, a reconciling one
// whose Reconcile lies (says applied when it was not, or not applied when
// it was).
func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		name    string
		p       promise
		f       keyFate
		in      intent
		lenient bool
		settle  bool
		err     string // the whole message after "key K"; "" for none
	}{
		// Keeping the promise.
		{name: "transactional: once", p: transactional, f: keyFate{applied: 1}},
		{name: "reconcile: once", p: reconciling, f: keyFate{applied: 1}},
		{name: "retry: once", p: retrying, f: keyFate{applied: 1}},
		{name: "retry: a crash before the effect, re-run", p: retrying, f: keyFate{applied: 1, reruns: 1}},
		{name: "retry: a crash after the effect, re-run: the window", p: retrying, f: keyFate{applied: 2, reruns: 1}},
		{name: "hold: once", p: holding, f: keyFate{applied: 1}},
		{name: "hold: a crash before the effect, held", p: holding, f: keyFate{held: true, dead: 1}, settle: true},
		{name: "hold: a crash after the effect, held", p: holding, f: keyFate{applied: 1, held: true, dead: 1}, settle: true},
		{name: "refused: never, dead-lettered", p: retrying, f: keyFate{dead: 1}, in: toRefuse},
		{name: "refused under hold: held, dead-lettered", p: holding, f: keyFate{held: true, dead: 1}, in: toRefuse},
		{name: "reconcile that cannot tell, a partner of the team's: retry's window", p: reconciling, lenient: true, f: keyFate{applied: 2, reruns: 1}},
		{name: "reconcile that cannot tell, a partner of the team's: hold's operator",
			p: newPromise(consumer.ModeLease, consumer.UnknownHold, true), lenient: true, f: keyFate{held: true, dead: 1}, settle: true},

		// Breaking it.
		{name: "a hold consumer that re-runs", p: holding, f: keyFate{applied: 2, reruns: 1},
			err: "at-most-once (hold, no reconcile): key K applied 2 times"},
		{name: "a hold consumer that re-runs once", p: holding, f: keyFate{applied: 1, reruns: 1},
			err: "at-most-once (hold, no reconcile): key K re-run after an unknown outcome (1 rerun lines): this configuration holds, never re-runs"},
		{name: "a hold consumer that loses a key", p: holding, f: keyFate{},
			err: "at-most-once (hold, no reconcile): key K neither applied nor held"},
		{name: "a hold consumer that holds without dead-lettering", p: holding, f: keyFate{held: true},
			err: "at-most-once (hold, no reconcile): key K held, but none of its messages in the dead-letter queue"},
		{name: "a retry consumer that runs three times", p: retrying, f: keyFate{applied: 3, reruns: 2},
			err: "at-least-once (retry, no reconcile): key K applied 3 times, want at most 2 (the second after an unknown outcome)"},
		{name: "a retry consumer that runs twice uncounted", p: retrying, f: keyFate{applied: 2},
			err: `at-least-once (retry, no reconcile): key K applied 2 times without a re-run counted for it (no "rerun" line with its storage key)`},
		{name: "a retry consumer that dead-letters", p: retrying, f: keyFate{dead: 1},
			err: "at-least-once (retry, no reconcile): key K never applied"},
		{name: "a retry consumer that holds", p: retrying, f: keyFate{applied: 1, held: true, dead: 1},
			err: "at-least-once (retry, no reconcile): key K dead-lettered (1 messages, held true): this configuration never dead-letters an unknown outcome"},
		{name: "a reconcile that says applied when it was not", p: reconciling, f: keyFate{applied: 0},
			err: "exactly-once (lease, reconcile; what it cannot tell: retry): key K applied 0 times, want 1"},
		{name: "a reconcile that says not applied when it was", p: reconciling, f: keyFate{applied: 2},
			err: "exactly-once (lease, reconcile; what it cannot tell: retry): key K applied 2 times, want 1"},
		{name: "a reconcile that never tells the kit's stub", p: reconciling, f: keyFate{applied: 2, reruns: 1},
			err: "exactly-once (lease, reconcile; what it cannot tell: retry): key K re-run after an unknown outcome: its Reconcile did not tell, though the partner answers every lookup"},
		{name: "a transactional consumer applied twice", p: transactional, f: keyFate{applied: 2},
			err: "exactly-once (transactional): key K applied 2 times, want 1"},
		{name: "a transactional consumer that re-runs", p: transactional, f: keyFate{applied: 1, reruns: 1},
			err: "exactly-once (transactional): key K re-run after an unknown outcome (1 rerun lines): this configuration never runs an effect again"},
		{name: "an exactly-once key applied, its message dead-lettered", p: transactional, f: keyFate{applied: 1, dead: 1},
			err: "exactly-once (transactional): key K applied, but 1 of its messages in the dead-letter queue"},
		{name: "a refused key applied", p: holding, f: keyFate{applied: 1, dead: 1}, in: toRefuse,
			err: "at-most-once (hold, no reconcile): key K applied 1 times, want never (the effect refuses it)"},
		{name: "a refused key not dead-lettered", p: transactional, f: keyFate{}, in: toRefuse,
			err: "exactly-once (transactional): key K not in the dead-letter queue (the effect refuses it every time)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			settle, err := tc.p.judge("K", tc.f, tc.in, tc.lenient)
			if settle != tc.settle {
				t.Errorf("settle = %t, want %t", settle, tc.settle)
			}
			if (tc.err == "") != (err == nil) || (err != nil && err.Error() != tc.err) {
				t.Errorf("judge = %v\nwant    %s", err, tc.err)
			}
		})
	}
}

func TestSettled(t *testing.T) {
	if err := holding.settled("K", 1, "not-done"); err != nil {
		t.Error(err)
	}
	err := holding.settled("K", 2, "not-done")
	if err == nil || !strings.Contains(err.Error(), "at-most-once (hold, no reconcile): key K applied 2 times once settled (not-done) and redriven, want 1") {
		t.Errorf("settled twice: %v", err)
	}
}

// TestPartnerScenarios: with the stub, each partner scenario sends one
// valid message whose key has its plan; the refusals' keys must be
// definite, the always-refused one is a dead letter, and the four the
// partner leaves uncertain count as unknown outcomes. Without the stub
// all six are skipped, saying why, and expect nothing.
func TestPartnerScenarios(t *testing.T) {
	r := testRun(planFaults(nil, 3))
	r.partnerSkip = ""
	scs := r.partner()
	if len(scs) != 6 {
		t.Fatalf("%d partner scenarios, want 6", len(scs))
	}
	for i, sc := range scs {
		if sc.skip != "" || len(sc.first) != 1 || len(sc.judged) != 1 || len(sc.plans) != 1 {
			t.Fatalf("%s: %+v, want one message, one key judged, its plan", sc.name, sc)
		}
		k := sc.judged[0]
		if _, ok := sc.plans[k.key]; !ok || k.key != fmt.Sprintf("kit1-partner%d-00", i) {
			t.Errorf("%s: key %s, plans %v", sc.name, k.key, sc.plans)
		}
		if refusal := strings.Contains(sc.name, "refuses"); k.refusal != refusal {
			t.Errorf("%s: refusal %t, want %t", sc.name, k.refusal, refusal)
		}
	}
	if always := scs[1]; always.judged[0].in != toRefuse || always.check == nil {
		t.Errorf("%s: %+v, want a refused key waited for in the dead-letter queue", always.name, always)
	}
	if r.want.keys != 5 || r.want.unknown != 4 || r.want.dead["partner1-00-v0"] != 1 {
		t.Errorf("expected %d keys, %d unknown outcomes, dead %v; want 5, 4, the always-refused one", r.want.keys, r.want.unknown, r.want.dead)
	}

	off := testRun(planFaults(nil, 3))
	for _, sc := range off.partner() {
		if sc.skip != "no stub in this test" || len(sc.first) != 0 {
			t.Errorf("%s without the stub: %+v, want skipped", sc.name, sc)
		}
	}
	if off.want.keys != 0 || len(off.want.dead) != 0 {
		t.Errorf("without the stub: %+v, want nothing expected", off.want)
	}
}
