package kit

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// The partner scenarios make the kit's stub fail the way a remote system
// does, one key each (a StubPlan, set before the key's message is sent),
// so that the effect's classification of the partner's answers (a
// refusal is definite; anything else may have been applied) and the
// consumer's promise are proven through the deployed stack, not only by
// the team's unit tests. They run when the application's probe is the
// stub's (kit.StubApplied: its effect calls the stub) and the stub is
// there ($SQSIDEM_KIT_STUB, onlocalstack -stub). Each is one valid
// message, sent with the main phase (none crashes anything):
//
//   - partner refuses once: a 4xx, then applied. The effect must mark the
//     refusal definite: released FAILED, run again on the next receive,
//     applied once — never re-run or held as an unknown outcome.
//   - partner refuses always: a 4xx on every POST: never applied, in the
//     dead-letter queue, its receipt FAILED.
//   - partner fails once: a 503 (nothing applied), then applied: an
//     unknown outcome to the consumer, settled its way.
//   - partner loses the reply: applied, the connection dropped without an
//     answer; then applied again if asked.
//   - partner loses the reply, honours the key: the same from a partner
//     that deduplicates by Idempotency-Key: a second POST is not applied.
//   - partner answers late: applied, the answer held until the caller gave
//     up (its deadline).
//
// The unknown outcomes are judged by the promise: exactly once with a
// Reconcile (Reconciled, or Executed after "not applied"); at least once
// under retry (Rerun: the lost and the late reply applied twice, the
// honoured one once); at most once under hold (held, then settled by the
// kit as operator).

// partnerRefusal is the 4xx of the refusal scenarios: a request the
// partner validated and refused, which it never applied.
const partnerRefusal = 422

// partner builds the partner scenarios, or skips them with the reason.
func (r *run) partner() []scenario {
	defs := []struct {
		name    string
		plan    StubPlan
		in      intent
		refusal bool
		account func()
	}{
		{"partner refuses once", StubPlan{Answers: []StubAnswer{StubRefuse(partnerRefusal), StubApply}}, toApply, true, r.want.failedOnce},
		{"partner refuses always", StubPlan{Answers: []StubAnswer{StubRefuse(partnerRefusal)}}, toRefuse, true, nil},
		{"partner fails once", StubPlan{Answers: []StubAnswer{StubRefuse(503), StubApply}}, toApply, false, func() { r.want.uncertain(true) }},
		{"partner loses the reply", StubPlan{Answers: []StubAnswer{StubLose, StubApply}}, toApply, false, func() { r.want.uncertain(true) }},
		{"partner loses the reply, honours the key", StubPlan{Answers: []StubAnswer{StubLose, StubApply}, Honour: true}, toApply, false, func() { r.want.uncertain(true) }},
		{"partner answers late", StubPlan{Answers: []StubAnswer{StubSlow, StubApply}}, toApply, false, func() { r.want.uncertain(true) }},
	}
	scs := make([]scenario, len(defs))
	for i, d := range defs {
		if r.partnerSkip != "" {
			scs[i] = scenario{name: d.name, skip: r.partnerSkip}
			continue
		}
		keys := r.keys(fmt.Sprintf("partner%d", i), 1)
		msgs := r.valid(keys, 0)
		if d.account != nil {
			d.account()
		} else {
			r.want.deadLetter(msgs[0].label, consumer.MetricFailed)
		}
		scs[i] = scenario{name: d.name, plans: map[string]StubPlan{keys[0]: d.plan}, first: []sending{{msgs, 1, 1}},
			judged: []keyed{{key: keys[0], in: d.in, labels: []string{msgs[0].label}, refusal: d.refusal}}}
		if d.in == toRefuse {
			label := msgs[0].label
			scs[i].check = func(ctx context.Context, t *testing.T) { r.waitDead(ctx, t, label) }
		}
	}
	return scs
}

// stubProbeKey marks a context with which StubApplied reports itself
// rather than asking the stub: the kit learns that the application's
// probe is the stub's, even wrapped in the team's own.
type stubProbeKey struct{}

// partnerSkip is why the partner scenarios do not apply to app; "" runs
// them.
func partnerSkip(ctx context.Context, app App, s Stack) string {
	var isStub bool
	app.Applied(context.WithValue(ctx, stubProbeKey{}, &isStub), s, nil)
	switch {
	case !isStub:
		return "App.Applied is not kit.StubApplied: these scenarios make the kit's stub fail as a partner does, for an effect that calls it"
	case os.Getenv(EnvStub) == "":
		return EnvStub + " is not set: the kit's stub is not running (onlocalstack -stub starts it)"
	}
	return ""
}
