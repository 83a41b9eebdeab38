package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
)

// Modes understood by the consumer (env IDEM_MODE).
const (
	ModeLease         = "lease"
	ModeTransactional = "transactional"
)

// visibilityMultiplier is the AWS guidance for SQS event sources: the queue's
// visibility timeout should be at least six times the function timeout, so a
// message is not redelivered while a (retried, throttled) invocation still
// holds it.
const visibilityMultiplier = 6

// Config is the single source of truth for the stack. Everything that must
// agree between resources (queue visibility vs. function timeout, receipt TTL
// vs. what the library is told) is derived from these fields, never stored
// twice.
type Config struct {
	// FunctionTimeout is the Lambda timeout T of both functions. Whole seconds.
	FunctionTimeout time.Duration
	// MaxReceiveCount is how often SQS delivers a message before moving it to
	// the dead-letter queue.
	MaxReceiveCount int
	// QueueRetention is how long the orders queue keeps a message.
	QueueRetention time.Duration
	// ReceiptRetention is how long a receipt lives (DynamoDB TTL). It must
	// outlive every possible redelivery, hence >= QueueRetention.
	ReceiptRetention time.Duration
	// DLQRetention is how long failed messages wait for an operator.
	DLQRetention time.Duration
	// BatchSize is the SQS batch size of the event source mapping (1..10);
	// the consumer processes a batch with this much concurrency.
	BatchSize int
	// MaxConcurrency caps concurrent consumer invocations (ESM scaling config).
	MaxConcurrency int
	// MemoryMB is the memory of both functions.
	MemoryMB int
	// SafetyMargin is subtracted from the invocation deadline when the
	// library sizes its lease, so a lease never outlives the invocation.
	SafetyMargin time.Duration
	// Mode is ModeLease or ModeTransactional.
	Mode string
	// EffectURL is an optional external endpoint the consumer calls as its
	// side effect; empty means the env var is not set.
	EffectURL string
	// RemovalPolicy applies to tables, log groups and queues.
	RemovalPolicy awscdk.RemovalPolicy
	// LogRetention of both functions' log groups.
	LogRetention awslogs.RetentionDays
}

// DefaultConfig is the production profile.
func DefaultConfig() Config {
	return Config{
		FunctionTimeout:  30 * time.Second,
		MaxReceiveCount:  5,
		QueueRetention:   4 * 24 * time.Hour, // SQS default, made explicit
		ReceiptRetention: 7 * 24 * time.Hour,
		DLQRetention:     14 * 24 * time.Hour, // SQS maximum
		BatchSize:        10,
		MaxConcurrency:   5,
		MemoryMB:         256,
		SafetyMargin:     3 * time.Second,
		Mode:             ModeLease,
		RemovalPolicy:    awscdk.RemovalPolicy_RETAIN,
		LogRetention:     awslogs.RetentionDays_ONE_MONTH,
	}
}

// TestConfig is the integration-suite profile: short timeouts so that
// redelivery and dead-lettering happen within seconds, and everything is
// destroyed with the stack.
func TestConfig() Config {
	c := DefaultConfig()
	c.FunctionTimeout = 2 * time.Second // visibility 12s
	c.MaxReceiveCount = 3
	c.SafetyMargin = 500 * time.Millisecond
	c.RemovalPolicy = awscdk.RemovalPolicy_DESTROY
	c.LogRetention = awslogs.RetentionDays_ONE_WEEK
	return c
}

// VisibilityTimeout of the orders queue: 6 x FunctionTimeout.
func (c Config) VisibilityTimeout() time.Duration {
	return visibilityMultiplier * c.FunctionTimeout
}

// BacklogAgeThreshold is the ApproximateAgeOfOldestMessage alarm threshold.
// A message can legitimately be as old as MaxReceiveCount full visibility
// timeouts (each failed attempt hides it for one) before it is dead-lettered;
// one more timeout on top of that cannot be explained by retries, only by a
// consumer that is not keeping up.
func (c Config) BacklogAgeThreshold() time.Duration {
	return time.Duration(c.MaxReceiveCount+1) * c.VisibilityTimeout()
}

// Validate reports every violated constraint at once.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	t := c.FunctionTimeout
	switch {
	case t <= 0:
		bad("FunctionTimeout must be positive, got %s", t)
	case t%time.Second != 0:
		// CloudFormation takes whole seconds for both Lambda and SQS.
		bad("FunctionTimeout must be whole seconds, got %s", t)
	case t > 15*time.Minute:
		bad("FunctionTimeout must be at most 15m (Lambda limit), got %s", t)
	}
	if c.SafetyMargin <= 0 {
		bad("SafetyMargin must be positive, got %s", c.SafetyMargin)
	}
	if t > 0 && t <= c.SafetyMargin {
		bad("FunctionTimeout (%s) must exceed SafetyMargin (%s), or no lease time is left", t, c.SafetyMargin)
	}
	if c.MaxReceiveCount < 1 || c.MaxReceiveCount > 1000 {
		bad("MaxReceiveCount must be in 1..1000, got %d", c.MaxReceiveCount)
	}
	if c.BatchSize < 1 || c.BatchSize > 10 {
		// Above 10 SQS requires a batching window; not worth it here.
		bad("BatchSize must be in 1..10, got %d", c.BatchSize)
	}
	if c.MaxConcurrency < 2 || c.MaxConcurrency > 1000 {
		bad("MaxConcurrency must be in 2..1000 (AWS minimum is 2), got %d", c.MaxConcurrency)
	}
	if c.MemoryMB < 128 || c.MemoryMB > 10240 {
		bad("MemoryMB must be in 128..10240, got %d", c.MemoryMB)
	}
	if c.QueueRetention < time.Minute || c.QueueRetention > 14*24*time.Hour {
		bad("QueueRetention must be in 1m..14d, got %s", c.QueueRetention)
	}
	if c.DLQRetention < time.Minute || c.DLQRetention > 14*24*time.Hour {
		bad("DLQRetention must be in 1m..14d, got %s", c.DLQRetention)
	}
	if c.ReceiptRetention < c.QueueRetention {
		bad("ReceiptRetention (%s) must be >= QueueRetention (%s): a receipt must outlive every redelivery", c.ReceiptRetention, c.QueueRetention)
	}
	if c.Mode != ModeLease && c.Mode != ModeTransactional {
		bad("Mode must be %q or %q, got %q", ModeLease, ModeTransactional, c.Mode)
	}
	if c.Mode == ModeTransactional && c.EffectURL != "" {
		// The consumer refuses this: a transactional effect may only be
		// DynamoDB writes, committed together with the receipt.
		bad("EffectURL must be empty in %s mode", ModeTransactional)
	}
	if c.RemovalPolicy == "" {
		bad("RemovalPolicy must be set")
	}
	if c.LogRetention == "" {
		bad("LogRetention must be set")
	}
	return errors.Join(errs...)
}
