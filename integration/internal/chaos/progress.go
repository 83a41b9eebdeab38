package chaos

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/exactlyonce/sqsidem/integration/internal/system"
)

// progress writes a line every so often while the run goes on.
func progress(ctx context.Context, w io.Writer, mode string, tl *Timeline, every time.Duration) {
	if every <= 0 {
		every = 5 * time.Second
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		samples := tl.Samples()
		if len(samples) == 0 {
			continue
		}
		s := samples[len(samples)-1]
		fmt.Fprintf(w, "[%-19s %4.0fs] sent %7d  applied %7d  deliveries %7d  queued %6d  in flight %5d  DLQ %4d  %4.0f msgs/s\n",
			mode, s.T.Seconds(), s.Sent, s.Effects, s.Deliveries, s.Visible, s.InFlight, s.DLQ, Rate(samples, every))
	}
}

// cpuUse is CPU seconds by part of the system, at one moment.
type cpuUse map[string]float64

// The parts of the CPU account, in report order.
const (
	partHarness   = "harness: poller, Runtime API, fault proxy, checks (Go, this process)"
	partConsumers = "consumer processes"
	partProducers = "producer processes"
	partReaped    = "Lambda processes that died during the run (killed, timed out: their whole lifetime)"
)

func cpuSnapshot(s *system.System, p *pools, emulators map[string]int) cpuUse {
	own, reaped := CPU(os.Getpid())
	c := cpuUse{
		partHarness:   own,
		partConsumers: CPUOf(s.Consumer.PIDs()...) + CPUOf(p.fanOut.PIDs()...) + CPUOf(p.zombie.PIDs()...),
		partProducers: CPUOf(p.producer.PIDs()...),
		partReaped:    reaped,
	}
	for name, pid := range emulators {
		c[name] = CPUOf(pid)
	}
	return c
}

func (c cpuUse) minus(before cpuUse) []CPUUse {
	order := []string{partHarness, partConsumers, partProducers, partReaped}
	for name := range c {
		switch name {
		case partHarness, partConsumers, partProducers, partReaped:
		default:
			order = append(order, name)
		}
	}
	var out []CPUUse
	for _, name := range order {
		out = append(out, CPUUse{Part: name, Seconds: max(c[name]-before[name], 0)})
	}
	return out
}
