package sim

import (
	"flag"
	"fmt"
	"maps"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var (
	seeds   = flag.Int("sim.seeds", 2000, "schedules to run (make test: 100,000)")
	first   = flag.Uint64("sim.first", 1, "first seed")
	oneSeed = flag.Uint64("sim.seed", 0, "run this seed alone and print its trace")
	every   = flag.Bool("sim.every", false, "go on past a failing seed: run them all, and list every one that fails (how common a bug is)")
)

// TestSimulate runs schedules -sim.first … -sim.first+-sim.seeds-1 and
// fails with the first failing seed's trace (with -sim.every, after
// running them all, listing every failing seed and its first violation).
// -sim.seed replays one.
func TestSimulate(t *testing.T) {
	if *oneSeed != 0 {
		res := Run(t, draw(*oneSeed))
		trace, violations := res.Explain()
		t.Logf("%s\n%d steps, doubles %v, stats %+v\n%s", res.Cfg, res.Steps, res.Doubles, res.Stats, trace)
		if len(violations) > 0 {
			t.Fatalf("seed %d: %s", *oneSeed, strings.Join(violations, "\n"))
		}
		return
	}
	// Schedules allocate much and keep little: collect less often.
	defer debug.SetGCPercent(debug.SetGCPercent(800))
	start := time.Now()
	var (
		next   atomic.Uint64
		mu     sync.Mutex
		failed *Result
		total  Totals
		all    = map[uint64]string{} // -sim.every: each failing seed's first violation
	)
	next.Store(*first)
	last := *first + uint64(*seeds)
	workers := runtime.GOMAXPROCS(0)
	running := make([]atomic.Uint64, workers) // the seed each worker runs, 0 none
	stop := watch(running)
	defer stop()
	t.Run("workers", func(t *testing.T) {
		for i := range workers {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				var mine Totals
				for {
					seed := next.Add(1) - 1
					if seed >= last {
						break
					}
					running[i].Store(seed)
					res := Run(t, draw(seed))
					running[i].Store(0)
					mine.add(res)
					if len(res.Violations) > 0 {
						mu.Lock()
						if failed == nil || res.Cfg.Seed < failed.Cfg.Seed {
							failed = &res
						}
						_, v := res.Explain()
						all[seed] = v[0]
						mu.Unlock()
						if *every {
							continue
						}
						next.Store(last) // stop the others
						break
					}
				}
				mu.Lock()
				total.merge(mine)
				mu.Unlock()
			})
		}
	})
	el := time.Since(start)
	t.Logf("%d schedules in %s (%.0f/s), %d steps; %s", total.Schedules, el.Round(time.Millisecond), float64(total.Schedules)/el.Seconds(), total.Steps, total)
	if *every && len(all) > 0 {
		var b strings.Builder
		for _, seed := range slices.Sorted(maps.Keys(all)) {
			fmt.Fprintf(&b, "\nseed %d: %s", seed, all[seed])
		}
		t.Logf("%d of %d schedules break an invariant:%s", len(all), total.Schedules, b.String())
	}
	if failed != nil {
		trace, violations := failed.Explain()
		t.Fatalf("seed %d breaks an invariant (replay: go test ./integration/sim -run TestSimulate -sim.seed %d):\n%s\n%s\ntrace:\n%s",
			failed.Cfg.Seed, failed.Cfg.Seed, failed.Cfg, strings.Join(violations, "\n"), trace)
	}
}

// hungAfter is how long one schedule may take (real time) before the
// watchdog calls it hung: the slowest take a second.
const hungAfter = 2 * time.Minute

// watch fails the run, naming the seed, when a worker runs one schedule
// for longer than hungAfter: a goroutine the bubble cannot see as blocked
// (waiting on a sync.Mutex whose holder waits for the scheduler) stops the
// scheduler for ever. It panics: a bubble cannot be stopped from outside.
func watch(running []atomic.Uint64) (stop func()) {
	done := make(chan struct{})
	go func() {
		since := make([]time.Time, len(running))
		seen := make([]uint64, len(running))
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				for i := range running {
					switch s := running[i].Load(); {
					case s != seen[i]:
						seen[i], since[i] = s, now
					case s != 0 && now.Sub(since[i]) > hungAfter:
						panic(fmt.Sprintf("sim: seed %d: the schedule hung (%s of real time): a goroutine blocked where synctest cannot see it, e.g. on a sync.Mutex held across a point (replay: go test ./integration/sim -run TestSimulate -sim.seed %d)", s, hungAfter, s))
					}
				}
			}
		}
	}()
	return func() { close(done) }
}

// Totals sums schedules.
type Totals struct {
	Schedules, Steps, Effects, Deliveries, DLQ, DLQApplied, Requeued, DLQInProgress, DLQDone, Cancelled, Panics int
	Held, SettledDone, SettledNotDone, SettledLive, Lapsed, Uncounted                                           int
	TimedOut, MetSibling, OwedAcross                                                                            int
	Doubles                                                                                                     map[string]int
	Outcomes                                                                                                    map[string]int
}

func (t *Totals) add(r Result) {
	t.merge(Totals{Schedules: 1, Steps: r.Steps, Effects: r.Stats.Effects, Deliveries: r.Stats.Deliveries,
		DLQ: r.Stats.DLQ, DLQApplied: r.Stats.DLQApplied, Requeued: r.Stats.Requeued, DLQInProgress: r.Stats.DLQInProgress, DLQDone: r.Stats.DLQDone,
		Cancelled: r.Stats.Cancelled, Panics: r.Stats.Panics, Held: r.Stats.Held, SettledDone: r.Stats.SettledDone,
		SettledNotDone: r.Stats.SettledNotDone, SettledLive: r.Stats.SettledLive, Lapsed: r.Stats.Lapsed, Uncounted: r.Stats.Uncounted,
		TimedOut: r.Stats.TimedOut, MetSibling: r.Stats.MetSibling, OwedAcross: r.Stats.OwedAcross, Doubles: r.Doubles, Outcomes: r.Stats.Outcomes})
}

func (t *Totals) merge(o Totals) {
	t.Schedules += o.Schedules
	t.Steps += o.Steps
	t.Effects += o.Effects
	t.Deliveries += o.Deliveries
	t.DLQ += o.DLQ
	t.DLQApplied += o.DLQApplied
	t.Requeued += o.Requeued
	t.DLQInProgress += o.DLQInProgress
	t.DLQDone += o.DLQDone
	t.Cancelled += o.Cancelled
	t.Panics += o.Panics
	t.Held += o.Held
	t.SettledDone += o.SettledDone
	t.SettledNotDone += o.SettledNotDone
	t.SettledLive += o.SettledLive
	t.Lapsed += o.Lapsed
	t.Uncounted += o.Uncounted
	t.TimedOut += o.TimedOut
	t.MetSibling += o.MetSibling
	t.OwedAcross += o.OwedAcross
	if t.Doubles == nil {
		t.Doubles, t.Outcomes = map[string]int{}, map[string]int{}
	}
	for k, v := range o.Doubles {
		t.Doubles[k] += v
	}
	for k, v := range o.Outcomes {
		t.Outcomes[k] += v
	}
}

func (t Totals) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d deliveries, %d effects, %d requeued, DLQ %d (%d of keys applied: %d after meeting in progress, %d done on their last receive), %d invocations cancelled, %d hook and tracer panics, %d records held (resolved: %d done, %d not done, %d of them during the run), %d unknown outcomes taken past their retention as new, %d reruns ended unconfirmed or lease lost (no rerun reported), %d invocations timed out on Managed Instances (their process ran on), %d leases of a sibling invocation in the same process met in progress, %d receipts one invocation owed written by another invocation's copy; outcomes",
		t.Deliveries, t.Effects, t.Requeued, t.DLQ, t.DLQApplied, t.DLQInProgress, t.DLQDone, t.Cancelled, t.Panics, t.Held, t.SettledDone, t.SettledNotDone, t.SettledLive, t.Lapsed, t.Uncounted,
		t.TimedOut, t.MetSibling, t.OwedAcross)
	for _, k := range slices.Sorted(maps.Keys(t.Outcomes)) {
		fmt.Fprintf(&b, " %s %d", k, t.Outcomes[k])
	}
	b.WriteString("; doubles allowed by cause:")
	for _, k := range slices.Sorted(maps.Keys(t.Doubles)) {
		fmt.Fprintf(&b, " [%s] %d", k, t.Doubles[k])
	}
	return b.String()
}
