package sim

import (
	"math/rand/v2"
	"time"
)

// Processes that run several invocations at once: Lambda Managed Instances
// (one execution environment, PerExecutionEnvironmentMaxConcurrency
// invocations in it: aws-lambda-go with AWS_LAMBDA_MAX_CONCURRENCY=N runs N
// handler goroutines in one process), or a worker with N batches in
// flight. The invocations of a process share what the process has: its
// Guard (its cache and the receipts it owes), its batch handler, its clock,
// and its fate — a crash or a freeze takes the process and every
// invocation in it. Each invocation has its own batch, context and
// deadline. On Managed Instances a deadline kills nothing: Lambda fails
// that invocation (its batch response is lost, its messages come back
// after the visibility timeout) and the process runs on, the invocation's
// code included, until its handler returns.

// instancesEvery is how rare a world of shared processes is: one seed in
// instancesEvery (crowded worlds aside).
const instancesEvery = 4

// drawInstances draws the knobs of shared processes, from their own
// generator r, so that a seed whose processes run one invocation at a time
// draws, and runs, the schedule it always did.
func drawInstances(c *Config, r *rand.Rand) {
	if c.Crowd || r.IntN(instancesEvery) != 0 {
		return
	}
	c.PerProcess = 2 + r.IntN(7) // 2–8
	// Batches small enough that one process has several, copies of a key
	// in more than one of them, and now and then copies that arrive while
	// the first ones still run.
	c.BatchSize = 1 + r.IntN(2)
	c.Concurrency = 1 + r.IntN(2)
	for i := range c.Messages {
		if c.Messages[i].SentAt == 0 && r.IntN(3) == 0 {
			c.Messages[i].SentAt = time.Duration(r.IntN(int(c.Timeout)))
		}
	}
	if c.Mode == "lease" && r.IntN(2) == 0 {
		// Receipt writes that hang until their invocation's deadline: the
		// receipts one invocation owes, for the others to write.
		c.PReceiptHang = 0.2 + 0.5*r.Float64()
	}
}

// perProcess is how many invocations a process runs at once.
func (c Config) perProcess() int { return max(1, c.PerProcess) }

// managed reports whether the processes are Lambda Managed Instances: a
// deadline fails the invocation and kills nothing.
func (c Config) managed() bool { return c.Lambda && c.perProcess() > 1 }

// clockPoint reports whether the Guard's clock reads are points. With one
// invocation at a time they are, named after the process (sched.release):
// the Guard's clock has no context to name its record by. With several,
// two calls of one key may be in one Guard at once, and what each does
// after reading the clock (an owed receipt put, another's looked up)
// would depend on which goroutine goes first. So there the clock is not a
// point, and every write the Guard makes to what its process shares — the
// receipts it owes, its cache — follows a point of the record that makes
// it instead: the store's answer (answered). Between two points a record
// then only reads what others share, while they wait at points of their
// own.
func (c Config) clockPoint() bool { return c.perProcess() == 1 }

// answered is the point after a store call of actor's Guard answers, where
// the Guard may go on to write what p's invocations share: a point of the
// record's own, in a process with several invocations.
func (p *process) answered(actor string) {
	if !p.w.cfg.clockPoint() {
		_, _ = p.at(actor+"/answered", kindWorld)
	}
}
