package exactlyonce

import (
	"fmt"
	"slices"
	"time"
)

// The limits of the two ways past one Lambda default: the event source
// mapping's provisioned mode and Lambda Managed Instances. Each is the
// service's, as CloudFormation's resource schema and awscdk v2.270.0 state
// them; where the two differ, the stricter one, since the stack goes
// through both.
const (
	// An SQS mapping in provisioned mode: MinimumPollers 2..200, default 2;
	// MaximumPollers 2..2000, default 200 (CloudFormation's schema now takes
	// up to 10,000 for SQS; awscdk v2.270.0's SqsEventSource refuses more
	// than 2,000).
	minPollersFloor, minPollersCeiling = 2, 200
	maxPollersCeiling                  = 2000
	defaultMinPollers                  = 2
	defaultMaxPollers                  = 200
	// invokesPerPoller: an SQS event poller handles up to 1 MB/s, 10
	// concurrent invokes or 10 polls a second, whichever it meets first.
	invokesPerPoller = 10

	// Managed Instances: PerExecutionEnvironmentMaxConcurrency 1..1600; an
	// execution environment of 2..32 GiB and at least one vCPU;
	// MinExecutionEnvironments and MaxExecutionEnvironments 0..15000; a
	// timeout of up to 5,400 s for invocations by an SQS mapping.
	maxEnvironmentConcurrency = 1600
	managedMinMemoryMB        = 2048
	managedMaxMemoryMB        = 32768
	maxEnvironments           = 15000
	managedMaxTimeout         = 90 * time.Minute
	defaultMemoryGiBPerVCPU   = 2
)

// memoryGiBPerVCPU are the memory-to-vCPU ratios Managed Instances offer
// (compute, general purpose, memory optimised instances).
var memoryGiBPerVCPU = []int{2, 4, 8}

// ManagedInstances runs the consumer on Lambda Managed Instances: EC2
// instances of a capacity provider (ConsumerProps.Instances), where one
// execution environment, one process, runs several invocations at once.
// Setting Concurrency turns it on; the zero value is Lambda's default
// compute. The runtime needs no setting of its own: Lambda tells the
// process AWS_LAMBDA_MAX_CONCURRENCY, and aws-lambda-go (1.51 and later)
// runs that many handlers at once, each batch with its own deadline.
type ManagedInstances struct {
	// Concurrency is how many invocations one execution environment runs
	// at once (PerExecutionEnvironmentMaxConcurrency, 1..1600; the
	// process's AWS_LAMBDA_MAX_CONCURRENCY). Each runs a batch with
	// BatchSize records at once, so a process works on up to Concurrency x
	// BatchSize records.
	Concurrency int
	// MemoryGiBPerVCPU is an execution environment's memory per vCPU
	// (ExecutionEnvironmentMemoryGiBPerVCpu): 2, 4 or 8; 0 takes 2. Its
	// vCPUs are MemoryMB / (1024 x MemoryGiBPerVCPU), a whole number.
	MemoryGiBPerVCPU int
	// MinEnvironments and MaxEnvironments bound the function's execution
	// environments (FunctionScalingConfig, 1..15000); 0 takes the
	// service's default (at least 3, no maximum). There is no scale to
	// zero: without an environment every batch is throttled, and
	// throttled batches reach the DLQ. MaxEnvironments x Concurrency must
	// cover MappingConcurrency, for the same reason.
	MinEnvironments int
	MaxEnvironments int
}

// Provisioned reports whether the event source mapping runs in provisioned
// mode (MinPollers or MaxPollers set).
func (c Config) Provisioned() bool {
	return c.MinPollers != 0 || c.MaxPollers != 0
}

// OnManagedInstances reports whether the consumer runs on Lambda Managed
// Instances (ManagedInstances.Concurrency set).
func (c Config) OnManagedInstances() bool {
	return c.ManagedInstances.Concurrency != 0
}

// MappingConcurrency is the most batches the event source mapping invokes
// at once: MaxConcurrency, or in provisioned mode up to 10 per poller.
// Whatever caps the function's concurrency below it throttles batches,
// and a throttled batch returns to the queue with its receive count
// raised.
func (c Config) MappingConcurrency() int {
	if c.Provisioned() {
		return invokesPerPoller * c.MaxPollers
	}
	return c.MaxConcurrency
}

// mappingConcurrencyName says where MappingConcurrency comes from, for
// the errors that compare with it.
func (c Config) mappingConcurrencyName() string {
	if c.Provisioned() {
		return fmt.Sprintf("10 x MaxPollers (%d)", c.MaxPollers)
	}
	return fmt.Sprintf("MaxConcurrency (%d)", c.MaxConcurrency)
}

// validateScaling checks how the consumer scales: the mapping's
// concurrency, what caps the function's, and its memory.
func (c Config) validateScaling() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if c.Provisioned() {
		if c.MinPollers < minPollersFloor || c.MinPollers > minPollersCeiling {
			bad("MinPollers must be in %d..%d (an SQS mapping's provisioned minimum), got %d", minPollersFloor, minPollersCeiling, c.MinPollers)
		}
		if c.MaxPollers < minPollersFloor || c.MaxPollers > maxPollersCeiling {
			bad("MaxPollers must be in %d..%d (an SQS mapping's provisioned maximum), got %d", minPollersFloor, maxPollersCeiling, c.MaxPollers)
		}
		if c.MinPollers > c.MaxPollers {
			bad("MinPollers (%d) must not exceed MaxPollers (%d)", c.MinPollers, c.MaxPollers)
		}
		if c.MaxConcurrency != 0 {
			// CDK refuses it too, but at bind time and without the why.
			bad("MaxConcurrency (%d) and provisioned pollers (MinPollers %d, MaxPollers %d) are exclusive: the service refuses an SQS mapping with both, and in provisioned mode MaxPollers bounds the concurrency (up to %d batches at once per poller); set MaxConcurrency to 0",
				c.MaxConcurrency, c.MinPollers, c.MaxPollers, invokesPerPoller)
		}
	} else if c.MaxConcurrency < 2 || c.MaxConcurrency > 1000 {
		bad("MaxConcurrency must be in 2..1000 (AWS minimum is 2), got %d; or set provisioned pollers (MinPollers, MaxPollers) instead", c.MaxConcurrency)
	}

	switch r := c.ReservedConcurrency; {
	case r == 0:
	case c.OnManagedInstances():
		bad("ReservedConcurrency (%d) is for Lambda's default compute: on Managed Instances the function's concurrency is its execution environments x ManagedInstances.Concurrency; cap it with ManagedInstances.MaxEnvironments, or leave ReservedConcurrency 0", r)
	case r < 0 || r < c.MappingConcurrency():
		bad("ReservedConcurrency (%d) must be 0 (none) or >= %s: throttled batches return to the queue and count towards MaxReceiveCount",
			r, c.mappingConcurrencyName())
	}

	if !c.OnManagedInstances() {
		if c.MemoryMB < 128 || c.MemoryMB > 10240 {
			bad("MemoryMB must be in 128..10240, got %d", c.MemoryMB)
		}
		if c.ManagedInstances != (ManagedInstances{}) {
			bad("ManagedInstances %+v sets no Concurrency: set it (the invocations one execution environment runs at once, 1..%d) to run on Managed Instances, or leave ManagedInstances zero",
				c.ManagedInstances, maxEnvironmentConcurrency)
		}
		return errs
	}

	mi := c.ManagedInstances
	if mi.Concurrency < 1 || mi.Concurrency > maxEnvironmentConcurrency {
		bad("ManagedInstances.Concurrency must be in 1..%d (PerExecutionEnvironmentMaxConcurrency), got %d", maxEnvironmentConcurrency, mi.Concurrency)
	}
	switch ratio := mi.MemoryGiBPerVCPU; {
	case !slices.Contains(memoryGiBPerVCPU, ratio):
		bad("ManagedInstances.MemoryGiBPerVCPU must be one of %v (the memory-to-vCPU ratios Managed Instances offer), got %d", memoryGiBPerVCPU, ratio)
	case c.MemoryMB < managedMinMemoryMB || c.MemoryMB > managedMaxMemoryMB:
		bad("MemoryMB must be in %d..%d on Managed Instances (an execution environment has 2 to 32 GiB), got %d", managedMinMemoryMB, managedMaxMemoryMB, c.MemoryMB)
	case c.MemoryMB%(ratio*1024) != 0:
		bad("MemoryMB (%d) must be a multiple of 1024 x ManagedInstances.MemoryGiBPerVCPU (%d): an execution environment has whole vCPUs of %d GiB each",
			c.MemoryMB, ratio*1024, ratio)
	}
	for _, n := range []struct {
		name  string
		value int
	}{{"MinEnvironments", mi.MinEnvironments}, {"MaxEnvironments", mi.MaxEnvironments}} {
		if n.value < 0 || n.value > maxEnvironments {
			bad("ManagedInstances.%s must be 0 (the service's default) or in 1..%d, got %d", n.name, maxEnvironments, n.value)
		}
	}
	if mi.MaxEnvironments > 0 && mi.MinEnvironments > mi.MaxEnvironments {
		bad("ManagedInstances.MinEnvironments (%d) must not exceed MaxEnvironments (%d)", mi.MinEnvironments, mi.MaxEnvironments)
	}
	if capacity := mi.MaxEnvironments * mi.Concurrency; mi.MaxEnvironments > 0 && mi.Concurrency > 0 && capacity < c.MappingConcurrency() {
		bad("ManagedInstances.MaxEnvironments x Concurrency (%d x %d = %d) must be at least %s, the batches the mapping invokes at once: throttled batches return to the queue and count towards MaxReceiveCount",
			mi.MaxEnvironments, mi.Concurrency, capacity, c.mappingConcurrencyName())
	}
	return errs
}
