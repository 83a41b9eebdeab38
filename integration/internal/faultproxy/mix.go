package faultproxy

import (
	"math/rand/v2"
	"sync"
	"time"
)

// Mix is a random fault mix: each request independently gets one of the
// faults with the given probabilities (their sum at most 1), and Delay
// added. Ops, when set, limits the faults to those operations; the others
// only get the delay.
type Mix struct {
	Fail, Throttle, ThroughputExceeded, LoseAck float64
	Delay                                       time.Duration
	Ops                                         []string
	Seed                                        uint64
}

// Decider returns the mix as a Decider. It is deterministic for a given
// seed and order of requests.
func (m Mix) Decider() Decider {
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(m.Seed, m.Seed^0x9e3779b97f4a7c15))
	ops := make(map[string]bool, len(m.Ops))
	for _, op := range m.Ops {
		ops[op] = true
	}
	return func(r Request) Action {
		act := Action{Delay: m.Delay}
		if len(ops) > 0 && !ops[r.Op] {
			return act
		}
		mu.Lock()
		x := rng.Float64()
		mu.Unlock()
		for _, f := range []struct {
			p    float64
			kind Kind
		}{{m.Fail, Fail}, {m.Throttle, Throttle}, {m.ThroughputExceeded, ThroughputExceeded}, {m.LoseAck, LoseAck}} {
			if x < f.p {
				act.Kind = f.kind
				return act
			}
			x -= f.p
		}
		return act
	}
}
