package sim

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Config is one schedule's world, drawn from its seed: the deployment, the
// messages, and how often things go wrong.
type Config struct {
	Seed    uint64
	Mode    string // "lease" or "tx"
	Backend string // "dynamodb" or "redis" (lease mode only)

	// The Lambda function and its queue.
	Timeout     time.Duration // function timeout T; queue visibility 6×T
	Lambda      bool          // killed at its deadline (false: a worker, which can outlive it frozen)
	BatchSize   int
	Concurrency int // processes at once (each runs PerProcess invocations)
	MaxReceives int // the queue's maxReceiveCount
	Visibility  bool
	LastWait    bool // sqsbatch.WithMaxReceiveCount
	Requeue     bool // sqsbatch.WithRequeue (with LastWait)
	Delete      bool // sqsbatch.WithDelete (with LastWait)

	// The Guard.
	Margin    time.Duration
	Lease     time.Duration // 0: the time left
	Retention time.Duration
	Cache     int
	MaxResult int // 0: the default

	// What is sent: copies of keys, some with another payload, some late.
	Messages []Message

	// Per process slot: clock skew (the store sees its times shifted).
	Skews []time.Duration

	// Fault rates, per point.
	PFail, PThrottle, PLost, PSlow float64 // store requests
	PCrash, PFreeze                float64 // any point of a process
	PEffectErr                     float64
	POOM                           float64 // Redis: the server fills up
	Poison                         string  // a key whose effect always fails ("" none)
	ItemLimit                      int     // DynamoDB item size limit (small: results too large)

	// Knobs added later (drawn from their own generator: see draw).

	// KeyByID: records are keyed by sqsbatch.MessageID, not a business key.
	// An item is then a message: on a standard queue the copies of a key
	// are SQS's own duplicates of one message (one message id, a receipt
	// handle each), and a requeued copy is a new message with a new id
	// that is still the same item.
	KeyByID bool
	// FIFO: a FIFO queue; every message is in a message group (Message.Group).
	FIFO bool
	// HandlerConcurrency is sqsbatch.WithConcurrency (0: 2).
	HandlerConcurrency int
	// PCancel: per point of a worker's process, the invocation's context
	// is cancelled there (the consumer runtime shutting down).
	PCancel float64
	// PHookPanic, PTracerPanic: per call, the record hook or the tracer
	// (sqsbatch.WithRecordHook, WithTracer) panics.
	PHookPanic, PTracerPanic float64
	// CheckReplicas: a Redis world whose primary has Replicas replicas
	// and a Store without WithWaitReplicas: Check runs first, and must
	// name the setting when there are any (a failover loses what a
	// replica had not received), and find nothing when there are none.
	CheckReplicas bool
	Replicas      int
	// Crowd: more keys than any in-memory bound of the Guard (owed
	// receipts, the cache), with receipt writes that hang (PReceiptHang)
	// until the deadline, so that one process owes many receipts at once.
	Crowd        bool
	PReceiptHang float64

	// Remote: the lease-mode effect is a call to a remote system
	// (remote.go), which does not deduplicate; Reconcile: the handler asks
	// it after an unknown outcome (sqsbatch.WithReconcile); Hold: the
	// Guard's policy for an unknown outcome it could not reconcile
	// (idem.WithUnknownOutcome: Hold, else Retry). PRemote: per call, a
	// fault (refused, applied with its reply lost, slow past its context,
	// a panic after it applied); PReconcileErr: per reconcile, it cannot
	// tell (an error, a panic) or is slow past its context.
	Remote, Reconcile, Hold bool
	PRemote, PReconcileErr  float64
	// Lapse: a world of remote effects whose copies are aimed at the end
	// of the key's retention (lapse, remote.go): an unknown outcome taken
	// past its expiry counts as absent.
	Lapse bool
	// PerProcess: invocations one process runs at once, sharing its Guard
	// and handler (instances.go): Lambda Managed Instances when Lambda,
	// else a worker with that many batches in flight. 0 or 1: one at a
	// time.
	PerProcess int
}

// Message is one message sent to the queue.
type Message struct {
	ID      string
	Key     string
	Variant int           // payload: copies with another variant are the same key with other content
	SentAt  time.Duration // after the start
	Large   bool          // its effect returns a result too large to keep

	Group    string // FIFO: its message group
	NoKey    bool   // sent without its key attribute (a producer's bug): rejected
	Requeues string // a sqsidem-requeues attribute its producer set ("" none)
}

// draw makes the Config of seed.
func draw(seed uint64) Config {
	r := rand.New(rand.NewPCG(seed, seed^0x5bd1e995))
	c := Config{Seed: seed}
	c.Mode = pick(r, "lease", "lease", "tx")
	c.Backend = "dynamodb"
	if c.Mode == "lease" && r.IntN(3) == 0 {
		c.Backend = "redis"
	}
	c.Timeout = pick(r, 2*time.Second, 4*time.Second, 10*time.Second)
	c.Lambda = r.IntN(4) != 0
	c.BatchSize = 1 + r.IntN(4)
	c.Concurrency = 1 + r.IntN(3)
	c.MaxReceives = 2 + r.IntN(3)
	c.Visibility = r.IntN(2) == 0
	c.LastWait = r.IntN(2) == 0
	c.Margin = pick(r, 300*time.Millisecond, 500*time.Millisecond, time.Second)
	switch r.IntN(3) {
	case 0:
		c.Lease = c.Timeout / 2 // shorter than the time left: a receipt may land past it
	case 1:
		c.Lease = c.Margin + time.Duration(r.IntN(int(c.Timeout-c.Margin)))
	}
	if c.Lease <= c.Margin {
		c.Lease = 0
	}
	c.Retention = pick(r, 30*time.Second, 2*time.Minute, time.Hour)
	c.Cache = pick(r, 0, 0, 4)
	if r.IntN(6) == 0 {
		c.MaxResult = 8 // results over 8 bytes are dropped, the receipt kept
	}

	keys := 1 + r.IntN(3)
	n := 2 + r.IntN(7)
	for i := range n {
		m := Message{ID: fmt.Sprintf("m%d", i), Key: fmt.Sprintf("k%d", r.IntN(keys))}
		if r.IntN(8) == 0 {
			m.Variant = 1
		}
		switch r.IntN(4) {
		case 0:
			m.SentAt = time.Duration(r.IntN(int(3 * c.Timeout)))
		case 1:
			m.SentAt = time.Duration(r.IntN(int(c.Retention + 6*c.Timeout)))
		}
		m.Large = r.IntN(10) == 0
		c.Messages = append(c.Messages, m)
	}
	for range 4 {
		c.Skews = append(c.Skews, skew(r, c.Margin))
	}

	rate := func(max float64) float64 { return max * r.Float64() * float64(r.IntN(2)) }
	c.PFail, c.PThrottle, c.PLost, c.PSlow = rate(0.2), rate(0.2), rate(0.2), rate(0.1)
	c.PCrash, c.PFreeze = rate(0.04), rate(0.04)
	c.PEffectErr = rate(0.2)
	if c.Backend == "redis" {
		c.POOM = rate(0.1)
	}
	if r.IntN(5) == 0 {
		c.Poison = "k0"
	}
	if r.IntN(8) == 0 {
		// DynamoDB refuses what a result makes larger: a record without
		// its result (about 450 bytes at most, the longest schema with a
		// released lease, the status and lease it took over and an error)
		// fits, a large result does not.
		c.ItemLimit = 520
	}
	// Knobs added later draw from a generator of their own, so that the
	// draws above, and the schedules of older seeds without them, stay.
	later := rand.New(rand.NewPCG(seed, 0x7265717565))
	c.Requeue = c.LastWait && later.IntN(2) == 0
	c.Delete = c.LastWait && later.IntN(2) == 0
	drawLater(&c, later)
	drawRemote(&c, rand.New(rand.NewPCG(seed, 0x72656d6f7465)))
	drawInstances(&c, rand.New(rand.NewPCG(seed, 0x696e7374616e6365)))
	return c
}

// skew is a process's clock offset: none, below the margin, at it, or past
// it (where the guarantee ends, and a double is classified as such).
func skew(r *rand.Rand, margin time.Duration) time.Duration {
	sign := time.Duration(1 - 2*r.IntN(2))
	switch r.IntN(6) {
	case 0:
		return sign * time.Duration(r.IntN(int(margin)))
	case 1:
		return sign * margin
	case 2:
		return sign * (margin + time.Duration(1+r.IntN(int(margin))))
	}
	return 0
}

func pick[T any](r *rand.Rand, vs ...T) T { return vs[r.IntN(len(vs))] }

func (c Config) String() string {
	s := fmt.Sprintf("seed %d: %s mode on %s, T=%s lambda=%v batch %d×%d, %d receives (last wait %v, requeue %v, delete %v), margin %s lease %s retention %s cache %d, %d messages, skews %v",
		c.Seed, c.Mode, c.Backend, c.Timeout, c.Lambda, c.BatchSize, c.Concurrency, c.MaxReceives, c.LastWait, c.Requeue, c.Delete, c.Margin, c.Lease, c.Retention, c.Cache, len(c.Messages), c.Skews)
	for _, k := range []struct {
		on   bool
		what string
	}{
		{c.FIFO, "FIFO"}, {c.KeyByID, "keyed by message id"}, {c.Crowd, fmt.Sprintf("crowded (receipts hang %.2f)", c.PReceiptHang)},
		{c.PCancel > 0, fmt.Sprintf("cancel %.3f", c.PCancel)}, {c.PHookPanic > 0, fmt.Sprintf("hook panics %.2f", c.PHookPanic)},
		{c.PTracerPanic > 0, fmt.Sprintf("tracer panics %.2f", c.PTracerPanic)}, {c.CheckReplicas, fmt.Sprintf("%d replicas", c.Replicas)},
		{c.Remote, fmt.Sprintf("remote effect (faults %.2f), %s", c.PRemote, c.policy())},
		{c.Lapse, "copies aimed at the end of the retention"},
		{c.managed(), fmt.Sprintf("Lambda Managed Instances: %d invocations per process", c.PerProcess)},
		{c.PerProcess > 1 && !c.Lambda, fmt.Sprintf("%d batches per worker", c.PerProcess)},
		{c.PReceiptHang > 0 && !c.Crowd, fmt.Sprintf("receipts hang %.2f", c.PReceiptHang)},
	} {
		if k.on {
			s += ", " + k.what
		}
	}
	return s
}
