package chaos

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestNewPlanShares(t *testing.T) {
	p := NewPlan("l", 10_000, DefaultRates, 7)
	plain := 0
	for _, k := range p.Keys {
		if !p.Poison[k] {
			plain++
		}
	}
	if plain != 10_000 || len(p.Poison) != 10 || p.Malformed != 10 {
		t.Fatalf("plain %d, poison %d, malformed %d; want 10000, 10, 10", plain, len(p.Poison), p.Malformed)
	}
	if dups := len(p.Retrigger) + len(p.Raw); dups != 3000 {
		t.Fatalf("duplicates %d, want 3000", dups)
	}
	if len(p.Retrigger) < 1300 || len(p.Raw) < 1300 {
		t.Fatalf("duplicates split %d re-triggered / %d raw, want about half each", len(p.Retrigger), len(p.Raw))
	}
	if len(p.FanOut) != 100 {
		t.Fatalf("fan-outs %d, want 100", len(p.FanOut))
	}
	for id := range p.Raw {
		if p.Retrigger[id] || p.Poison[id] {
			t.Fatalf("%s is a raw duplicate and something else too", id)
		}
	}
}

func TestNewPlanPoisonEarly(t *testing.T) {
	p := NewPlan("t", 4000, DefaultRates, 1)
	for i, k := range p.Keys {
		if p.Poison[k] && i > 400+len(p.Poison) {
			t.Fatalf("poison key %s at position %d: want it in the first tenth", k, i)
		}
		if p.Poison[k] && !strings.HasPrefix(k, "t-poison-") {
			t.Fatalf("poison key %q", k)
		}
	}
	if got := p.PoisonKeys(); len(got) != len(p.Poison) || !slices.IsSorted(got) {
		t.Fatalf("PoisonKeys %v", got)
	}
}

func TestNewPlanDeterministic(t *testing.T) {
	a, b := NewPlan("l", 500, DefaultRates, 3), NewPlan("l", 500, DefaultRates, 3)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed made two different plans")
	}
	if c := NewPlan("l", 500, DefaultRates, 4); reflect.DeepEqual(a.Raw, c.Raw) {
		t.Fatal("another seed made the same raw duplicates")
	}
}

func TestNewPlanSmallRunGetsOneOfEach(t *testing.T) {
	p := NewPlan("s", 50, DefaultRates, 1)
	if len(p.Poison) != 1 || p.Malformed != 1 || len(p.FanOut) != 1 {
		t.Fatalf("poison %d, malformed %d, fan-out %d; want one each", len(p.Poison), p.Malformed, len(p.FanOut))
	}
	none := NewPlan("s", 50, Rates{}, 1)
	if len(none.Poison)+none.Malformed+len(none.FanOut)+len(none.Raw)+len(none.Retrigger) != 0 || len(none.Keys) != 50 {
		t.Fatalf("zero rates: %+v", none)
	}
}

func TestRatesValidate(t *testing.T) {
	if err := DefaultRates.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, r := range []Rates{{Kill: -0.1}, {Duplicates: 1.5}, {Throttle: 0.5, Fail: 0.4, LoseAck: 0.2}, {PartnerSlow: -0.1}, {PartnerRefuse: 0.5, PartnerLoseReply: 0.4, PartnerSlow: 0.2}} {
		if r.Validate() == nil {
			t.Errorf("%+v: want an error", r)
		}
	}
}
