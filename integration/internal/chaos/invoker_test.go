package chaos

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/integration/internal/lambdarun"
)

func TestKillPlanRate(t *testing.T) {
	v := &Invoker{Rates: Rates{Kill: 0.1}, Seed: 9}
	v.init()
	points := map[string]int{}
	for range 30000 {
		if p, after := v.killPlan(); p != "" {
			points[p]++
			if (p == lambdarun.PointKillAfter) != (after > 0) {
				t.Fatalf("plan %q with delay %v", p, after)
			}
		}
	}
	for _, p := range []string{PointBeforeEffect, PointAfterEffect, lambdarun.PointKillAfter} {
		if points[p] < 800 || points[p] > 1200 {
			t.Errorf("%s: %d of 30000 invocations, want about 1000", p, points[p])
		}
	}
}

func TestKillPlanThatDidNotFireMovesOn(t *testing.T) {
	v := &Invoker{Seed: 1} // no new kills: only those moved on
	v.init()
	v.requeue(PointAfterEffect)
	v.requeue(PointAfterEffect) // at most one waits
	v.requeue("zombie")
	if p, _ := v.killPlan(); p != PointAfterEffect {
		t.Fatalf("plan %q, want the after-effect kill that did not fire", p)
	}
	if p, _ := v.killPlan(); p != "" {
		t.Fatalf("plan %q, want none", p)
	}
	if !v.draw("zombie", 0) || v.draw("zombie", 0) {
		t.Fatal("want the pending zombie once")
	}
}

func TestParseBatch(t *testing.T) {
	id := "o-attr"
	ev := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", Body: `{"ref":"o-body"}`, MessageAttributes: map[string]events.SQSMessageAttribute{"ref": {StringValue: &id, DataType: "String"}}},
		{MessageId: "m2", Body: `{"ref":"o-body"}`},
		{MessageId: "m3", Body: `{"ref": "cut`},
	}}
	payload, _ := json.Marshal(ev)
	b := (&Invoker{Key: "ref"}).parseBatch(payload)
	if !slices.Equal(b.keys, []string{"o-attr", "o-body", ""}) {
		t.Fatalf("keys %q", b.keys)
	}
	if r, ok := b.record("o-body"); !ok || r.MessageId != "m2" {
		t.Fatalf("record o-body: %v %v", r.MessageId, ok)
	}
}
