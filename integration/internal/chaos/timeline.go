package chaos

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/exactlyonce/sqsidem/integration/internal/system"
)

// Sample is the state of a run at one moment.
type Sample struct {
	T          time.Duration // since the run's first send
	Sent       int64         // messages sent: producer, raw copies, malformed
	Deliveries int64         // records handed to consumers
	Effects    int64         // records that ran their effect (executed, rerun, unconfirmed, lease lost)
	Visible    int           // messages waiting in the queue
	InFlight   int           // received, not yet deleted or visible again
	DLQ        int
}

// Timeline samples a run once per Every until stopped.
type Timeline struct {
	SQS      *sqs.Client
	Queue    string
	DLQ      string
	Every    time.Duration
	Counters func() (sent, deliveries, effects int64)

	mu      sync.Mutex
	start   time.Time
	samples []Sample
}

// Run samples until ctx ends; start is the run's time zero.
func (t *Timeline) Run(ctx context.Context, start time.Time) {
	t.mu.Lock()
	t.start = start
	t.mu.Unlock()
	tick := time.NewTicker(t.Every)
	defer tick.Stop()
	for {
		t.Take(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Take adds one sample now and returns it.
func (t *Timeline) Take(ctx context.Context) Sample {
	s := Sample{T: time.Since(t.start)}
	s.Sent, s.Deliveries, s.Effects = t.Counters()
	var err error
	if s.Visible, s.InFlight, err = system.QueueDepth(ctx, t.SQS, t.Queue); err == nil {
		v, f, _ := system.QueueDepth(ctx, t.SQS, t.DLQ)
		s.DLQ = v + f
	}
	if err != nil {
		return s // cancelled: keep the last good samples only
	}
	t.mu.Lock()
	t.samples = append(t.samples, s)
	t.mu.Unlock()
	return s
}

// Samples returns the samples so far.
func (t *Timeline) Samples() []Sample {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Sample(nil), t.samples...)
}

// Rate is the deliveries per second between the last sample and the one
// window before it.
func Rate(samples []Sample, window time.Duration) float64 {
	if len(samples) < 2 {
		return 0
	}
	last := samples[len(samples)-1]
	for i := len(samples) - 2; i >= 0; i-- {
		if last.T-samples[i].T >= window || i == 0 {
			dt := (last.T - samples[i].T).Seconds()
			if dt <= 0 {
				return 0
			}
			return float64(last.Deliveries-samples[i].Deliveries) / dt
		}
	}
	return 0
}

// SteadyRate is the median of the delivery rates over consecutive windows
// of the given length: the throughput of a run without its start and its
// tail (the last deliveries wait out visibility timeouts).
func SteadyRate(samples []Sample, window time.Duration) float64 {
	var rates []float64
	from := 0
	for i, s := range samples {
		if s.T-samples[from].T >= window {
			dt := (s.T - samples[from].T).Seconds()
			rates = append(rates, float64(s.Deliveries-samples[from].Deliveries)/dt)
			from = i
		}
	}
	if len(rates) == 0 {
		return 0
	}
	slices.Sort(rates)
	return rates[len(rates)/2]
}
