package chaos

import (
	"context"
	"sync"
	"time"

	"github.com/exactlyonce/sqsidem/integration/internal/partner"
)

// PartnerChaos drives the partner's faults through a lease-mode run: the
// rates (Rates.Partner*) from the first send, and one outage: from
// Outage.After after the first send, for Outage.For, every call and every
// lookup is refused (partner.Faults.Down), as a remote system that is out
// for longer than the lease. Stop turns everything off, for the checks and
// the resolution that follow the run.
type PartnerChaos struct {
	Server  *partner.Server
	Rates   Rates
	SlowFor time.Duration
	Outage  Outage
	// Tick is how often Run looks at the clock (default 100 ms).
	Tick time.Duration

	mu      sync.Mutex
	down    [2]time.Time // the outage as it took place
	stopped bool
}

// partnerFaults are the partner's faults at now, for a run whose first
// send was at start.
func partnerFaults(r Rates, slowFor time.Duration, o Outage, start, now time.Time) partner.Faults {
	f := partner.Faults{Refuse: r.PartnerRefuse, LoseReply: r.PartnerLoseReply, Slow: r.PartnerSlow, SlowFor: slowFor}
	if o.For > 0 && !now.Before(start.Add(o.After)) && now.Before(start.Add(o.After+o.For)) {
		f.Down = true
	}
	return f
}

// Run sets the faults from start on and follows the outage until ctx ends
// or Stop.
func (p *PartnerChaos) Run(ctx context.Context, start time.Time) {
	tick := p.Tick
	if tick <= 0 {
		tick = 100 * time.Millisecond
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	var last partner.Faults
	first := true
	for {
		now := time.Now()
		f := partnerFaults(p.Rates, p.SlowFor, p.Outage, start, now)
		p.mu.Lock()
		if p.stopped {
			p.mu.Unlock()
			return
		}
		if first || f != last {
			p.Server.SetFaults(f)
			switch {
			case f.Down && !last.Down:
				p.down[0] = now
			case !f.Down && last.Down:
				p.down[1] = now
			}
			first, last = false, f
		}
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Stop turns every fault off for good.
func (p *PartnerChaos) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stopped && !p.down[0].IsZero() && p.down[1].IsZero() {
		p.down[1] = time.Now()
	}
	p.stopped = true
	p.Server.SetFaults(partner.Faults{})
}

// Down returns when the outage began and ended (zero: not reached).
func (p *PartnerChaos) Down() (from, to time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.down[0], p.down[1]
}
