package sim

import (
	"flag"
	"sync/atomic"
	"testing"
)

var exactSeeds = flag.Int("sim.exact", 300, "seeds TestReplayIsExact runs twice")

// TestReplayIsExact: a seed replays exactly — the same trace, the same
// result — so that a failing seed printed by TestSimulate is one a reader
// can follow and a fix can be checked against.
func TestReplayIsExact(t *testing.T) {
	running := make([]atomic.Uint64, 1)
	stop := watch(running)
	defer stop()
	for seed := uint64(1); seed <= uint64(*exactSeeds); seed++ {
		running[0].Store(seed)
		a, b := Run(t, draw(seed)), Run(t, draw(seed))
		if a.Trace() != b.Trace() || a.Steps != b.Steps {
			t.Fatalf("seed %d replays differently (%d and %d steps):\n%s\n---\n%s", seed, a.Steps, b.Steps, a.Trace(), b.Trace())
		}
	}
}
