package sim

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"time"
)

// crowdEvery is how rare a crowded world is (one seed in crowdEvery): it
// costs as much as a few hundred ordinary ones.
const crowdEvery = 1000

// drawLater draws the knobs added after the first ones, from their own
// generator r, so that a seed draws what it drew before them; a seed whose
// later knobs are all off runs the schedule it always ran.
func drawLater(c *Config, r *rand.Rand) {
	if r.IntN(crowdEvery) == 0 {
		crowd(c, r)
		return
	}
	c.FIFO = r.IntN(5) == 0
	c.KeyByID = r.IntN(4) == 0
	if !c.Lambda && r.IntN(3) == 0 {
		c.PCancel = 0.01 + 0.09*r.Float64()
	}
	// A hook or tracer that panics changes no schedule: the handler
	// recovers it, and no point is drawn for it (chance).
	if r.IntN(4) == 0 {
		c.PHookPanic = r.Float64() / 2
	}
	if r.IntN(4) == 0 {
		c.PTracerPanic = r.Float64() / 2
	}
	if c.Backend == "redis" && r.IntN(3) == 0 {
		c.CheckReplicas, c.Replicas = true, r.IntN(3)
	}
	if c.FIFO {
		groups := 1 + r.IntN(3) // keys ≤ 3: one key often in several groups
		for i := range c.Messages {
			c.Messages[i].Group = fmt.Sprintf("g%d", r.IntN(groups))
		}
	}
	if !c.KeyByID && r.IntN(10) == 0 {
		c.Messages[r.IntN(len(c.Messages))].NoKey = true
	}
	if c.Requeue && r.IntN(3) == 0 {
		for i := range c.Messages {
			c.Messages[i].Requeues = pick(r, "", "-1000", "-1", "x", "0", "1", "2", "3", "99")
		}
	}
	if c.KeyByID {
		byMessageID(c)
	}
}

// byMessageID makes the items of c messages: each message's Key becomes the
// message id its records are keyed by. On a standard queue the copies of a
// key with one payload are SQS's duplicates of one message (they share its
// id); on a FIFO queue, which does not duplicate, every message is its own.
func byMessageID(c *Config) {
	first := map[[2]any]string{}
	poison := ""
	for i := range c.Messages {
		m := &c.Messages[i]
		id := m.ID
		if !c.FIFO {
			k := [2]any{m.Key, m.Variant}
			if f, ok := first[k]; ok {
				id = f
			} else {
				first[k] = id
			}
		}
		if m.Key == c.Poison && poison == "" {
			poison = id
		}
		m.Key = id
	}
	c.Poison = poison
}

// crowd makes c a world of more keys than the Guard keeps anything for in
// memory: one worker, one batch of every key at once, its receipts mostly
// hanging until the deadline (Unconfirmed: owed), then a second copy of
// every key in the same process, which must not run any effect again.
func crowd(c *Config, r *rand.Rand) {
	keys := 150 + r.IntN(100) // more than the 128 owed receipts a Guard once kept
	*c = Config{
		Seed: c.Seed, Mode: "lease", Backend: c.Backend, Timeout: c.Timeout,
		BatchSize: keys, Concurrency: 1, MaxReceives: 3, HandlerConcurrency: keys,
		Margin: c.Margin, Retention: time.Hour, Cache: pick(r, 0, 4, 16), MaxResult: pick(r, 0, 8),
		Skews: make([]time.Duration, 4), Crowd: true, PReceiptHang: 0.7 + 0.3*r.Float64(),
	}
	for i := range keys {
		c.Messages = append(c.Messages, Message{ID: fmt.Sprintf("m%d", i), Key: fmt.Sprintf("k%d", i), Large: r.IntN(4) == 0})
	}
	for i := range keys {
		c.Messages = append(c.Messages, Message{ID: fmt.Sprintf("m%d", keys+i), Key: fmt.Sprintf("k%d", i),
			SentAt: 2*c.Timeout + time.Duration(r.IntN(int(time.Second)))})
	}
}

// chance decides, with probability p, something that must not depend on
// the order in which goroutines running at once get to it: a hash of the
// seed and what is decided, not a draw from a generator.
func (w *world) chance(p float64, what ...string) bool {
	if p <= 0 {
		return false
	}
	h := fnv.New64a()
	fmt.Fprint(h, w.cfg.Seed)
	for _, s := range what {
		h.Write([]byte{0})
		h.Write([]byte(s))
	}
	return float64(h.Sum64()>>11)/(1<<53) < p
}
