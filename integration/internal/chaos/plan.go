package chaos

import (
	"fmt"
	"math/rand/v2"

	"github.com/exactlyonce/sqsidem/integration/internal/system"
)

// Rates are the chaos mix. Order shares are of the orders published; the
// kill and zombie shares are of consumer invocations; the DynamoDB shares
// are of the Lambdas' DynamoDB requests.
type Rates struct {
	Duplicates float64 // orders sent again: half by re-triggered producer runs, half as raw copies
	FanOut     float64 // orders also delivered to 8 instances at the same moment
	Kill       float64 // invocations SIGKILLed: before the effect, after it, or mid-batch
	Zombie     float64 // invocations frozen past their lease and taken over
	Throttle   float64 // DynamoDB requests throttled
	Fail       float64 // DynamoDB requests answered 500
	LoseAck    float64 // DynamoDB requests applied, then answered 500
	Poison     float64 // orders that fail every time (extra orders)
	Malformed  float64 // messages whose body is not an order (extra messages)
}

// DefaultRates is the mix.
var DefaultRates = Rates{
	Duplicates: 0.30, FanOut: 0.01, Kill: 0.01, Zombie: 0.005,
	Throttle: 0.01, Fail: 0.01, LoseAck: 0.01, Poison: 0.001, Malformed: 0.001,
}

// Validate refuses shares outside [0, 1].
func (r Rates) Validate() error {
	for name, v := range map[string]float64{
		"duplicates": r.Duplicates, "fan-out": r.FanOut, "kill": r.Kill, "zombie": r.Zombie,
		"throttle": r.Throttle, "5xx": r.Fail, "lost-ack": r.LoseAck, "poison": r.Poison, "malformed": r.Malformed,
	} {
		if v < 0 || v > 1 {
			return fmt.Errorf("chaos: rate %s = %v, want 0..1", name, v)
		}
	}
	if r.Throttle+r.Fail+r.LoseAck > 1 {
		return fmt.Errorf("chaos: DynamoDB fault rates add up to more than 1")
	}
	return nil
}

// Plan is what one mode publishes, decided up front from a seed.
type Plan struct {
	Orders []system.Order // in publishing order; poison orders among them
	// Retrigger and Raw are the orders sent again: by a re-triggered
	// producer run (its guard must skip them) and by another upstream
	// that knows nothing of the producer.
	Retrigger, Raw map[string]bool
	FanOut         map[string]bool
	Poison         map[string]bool
	// Malformed are the order ids of messages whose body is cut short;
	// they travel in the orderId attribute and can only end in the DLQ.
	Malformed []string
}

// NewPlan returns the plan for n orders with ids prefix-000000 ….
func NewPlan(prefix string, n int, r Rates, seed uint64) Plan {
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	p := Plan{Retrigger: map[string]bool{}, Raw: map[string]bool{}, FanOut: map[string]bool{}, Poison: map[string]bool{}}
	plain := make([]system.Order, n)
	for i := range plain {
		plain[i] = system.Order{OrderID: fmt.Sprintf("%s-%06d", prefix, i), Customer: fmt.Sprintf("c-%d", i%997), AmountCents: int64(100 + i%5000)}
	}
	for _, i := range rng.Perm(n)[:count(n, r.Duplicates)] {
		if rng.IntN(2) == 0 {
			p.Retrigger[plain[i].OrderID] = true
		} else {
			p.Raw[plain[i].OrderID] = true
		}
	}
	for _, i := range rng.Perm(n)[:count(n, r.FanOut)] {
		p.FanOut[plain[i].OrderID] = true
	}
	// Poison orders go out in the first tenth of the run, so that their
	// receives (three, a visibility timeout apart: 36 s in the test
	// profile) end in the DLQ while the bulk still runs rather than after.
	poisonAt := map[int]bool{}
	for want := min(count(n, r.Poison), max(n/10, 1)); len(poisonAt) < want; {
		poisonAt[rng.IntN(max(n/10, 1))] = true
	}
	for i, o := range plain {
		p.Orders = append(p.Orders, o)
		if poisonAt[i] {
			q := system.Order{OrderID: fmt.Sprintf("%s-poison-%04d", prefix, len(p.Poison)), Customer: "c-poison", AmountCents: 1, Poison: true}
			p.Orders = append(p.Orders, q)
			p.Poison[q.OrderID] = true
		}
	}
	for i := range count(n, r.Malformed) {
		p.Malformed = append(p.Malformed, fmt.Sprintf("%s-malformed-%04d", prefix, i))
	}
	return p
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
