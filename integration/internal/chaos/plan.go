package chaos

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
)

// Rates are the chaos mix. Key shares are of the keys published; the
// kill and zombie shares are of consumer invocations; the DynamoDB shares
// are of the Lambdas' DynamoDB requests; the partner's shares are of the
// lease-mode effect's calls to the partner.
type Rates struct {
	Duplicates float64 // keys sent again: half by re-triggered producer runs, half as raw copies
	FanOut     float64 // keys also delivered to 8 instances at the same moment
	Kill       float64 // invocations SIGKILLed: before the effect, after it, or mid-batch
	Zombie     float64 // invocations frozen past their lease and taken over
	Throttle   float64 // DynamoDB requests throttled
	Fail       float64 // DynamoDB requests answered 500
	LoseAck    float64 // DynamoDB requests applied, then answered 500
	Poison     float64 // keys that fail every time (extra keys)
	Malformed  float64 // messages no key can be read from (extra messages)
	// The partner's faults (lease mode): calls refused with a 503 before
	// anything took place; applied and their reply lost (the connection
	// cut); applied and answered after the caller's deadline.
	PartnerRefuse    float64
	PartnerLoseReply float64
	PartnerSlow      float64
}

// DefaultRates is the mix.
var DefaultRates = Rates{
	Duplicates: 0.30, FanOut: 0.01, Kill: 0.01, Zombie: 0.005,
	Throttle: 0.01, Fail: 0.01, LoseAck: 0.01, Poison: 0.001, Malformed: 0.001,
	PartnerRefuse: 0.01, PartnerLoseReply: 0.01, PartnerSlow: 0.005,
}

// Validate refuses shares outside [0, 1].
func (r Rates) Validate() error {
	for name, v := range map[string]float64{
		"duplicates": r.Duplicates, "fan-out": r.FanOut, "kill": r.Kill, "zombie": r.Zombie,
		"throttle": r.Throttle, "5xx": r.Fail, "lost-ack": r.LoseAck, "poison": r.Poison, "malformed": r.Malformed,
		"partner-refuse": r.PartnerRefuse, "partner-lost-reply": r.PartnerLoseReply, "partner-slow": r.PartnerSlow,
	} {
		if v < 0 || v > 1 {
			return fmt.Errorf("chaos: rate %s = %v, want 0..1", name, v)
		}
	}
	if r.Throttle+r.Fail+r.LoseAck > 1 {
		return fmt.Errorf("chaos: DynamoDB fault rates add up to more than 1")
	}
	if r.PartnerRefuse+r.PartnerLoseReply+r.PartnerSlow > 1 {
		return fmt.Errorf("chaos: partner fault rates add up to more than 1")
	}
	return nil
}

// Plan is what one mode publishes, decided up front from a seed.
type Plan struct {
	Keys []string // in publishing order; poison keys among them
	// Retrigger and Raw are the keys sent again: by a re-triggered
	// producer run (its guard must skip them) and by another upstream
	// that knows nothing of the producer.
	Retrigger, Raw map[string]bool
	FanOut         map[string]bool
	// Poison keys fail every time (the consumer's FAULT_POISON_KEYS): they
	// can only end in the DLQ.
	Poison map[string]bool
	// Malformed is the number of messages no key can be read from
	// (system.Malformed, no key attribute): they can only end in the DLQ.
	Malformed int
}

// NewPlan returns the plan for n keys prefix-000000 ….
func NewPlan(prefix string, n int, r Rates, seed uint64) Plan {
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	p := Plan{Retrigger: map[string]bool{}, Raw: map[string]bool{}, FanOut: map[string]bool{}, Poison: map[string]bool{}}
	plain := make([]string, n)
	for i := range plain {
		plain[i] = fmt.Sprintf("%s-%06d", prefix, i)
	}
	for _, i := range rng.Perm(n)[:count(n, r.Duplicates)] {
		if rng.IntN(2) == 0 {
			p.Retrigger[plain[i]] = true
		} else {
			p.Raw[plain[i]] = true
		}
	}
	for _, i := range rng.Perm(n)[:count(n, r.FanOut)] {
		p.FanOut[plain[i]] = true
	}
	// Poison keys go out in the first tenth of the run, so that their
	// receives (three, a visibility timeout apart: 36 s in the test
	// profile) end in the DLQ while the bulk still runs rather than after.
	poisonAt := map[int]bool{}
	for want := min(count(n, r.Poison), max(n/10, 1)); len(poisonAt) < want; {
		poisonAt[rng.IntN(max(n/10, 1))] = true
	}
	for i, k := range plain {
		p.Keys = append(p.Keys, k)
		if poisonAt[i] {
			q := fmt.Sprintf("%s-poison-%04d", prefix, len(p.Poison))
			p.Keys = append(p.Keys, q)
			p.Poison[q] = true
		}
	}
	p.Malformed = count(n, r.Malformed)
	return p
}

// PoisonKeys are the poison keys, sorted: the consumer's FAULT_POISON_KEYS.
func (p Plan) PoisonKeys() []string {
	return slices.Sorted(maps.Keys(p.Poison))
}

// count is share of n, rounded; at least 1 when share > 0, so a small run
// still gets one of each.
func count(n int, share float64) int {
	c := int(float64(n)*share + 0.5)
	if share > 0 && c == 0 {
		c = 1
	}
	return min(c, n)
}
