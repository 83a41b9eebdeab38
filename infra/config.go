package main

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
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
	//
	// It is deliberately not tied to DLQRetention: redriving the DLQ back to
	// the orders queue is only safe within ReceiptRetention of a message's
	// first delivery. After that its receipt is gone (TTL), so a redriven
	// message whose effect was already applied would be applied again.
	ReceiptRetention time.Duration
	// DLQRetention is how long failed messages wait for an operator. It must
	// exceed QueueRetention: on a standard queue a dead-lettered message
	// keeps its original enqueue timestamp, so the DLQ's retention counts
	// from the first enqueue, not from the move to the DLQ.
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
	// side effect; empty means the env var is not set. Otherwise an absolute
	// http(s) URL with a host (the consumer's envconfig HTTPURL rule).
	EffectURL string
	// AlarmTopicARN is an optional existing SNS topic every alarm notifies;
	// empty means the alarms have no actions.
	AlarmTopicARN string
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
	if c.DLQRetention <= c.QueueRetention {
		// A dead-lettered message keeps its original enqueue timestamp
		// (standard queues), so a DLQ that retains no longer than the source
		// queue can drop it on arrival.
		bad("DLQRetention (%s) must exceed QueueRetention (%s): a dead-lettered message keeps its original enqueue timestamp", c.DLQRetention, c.QueueRetention)
	}
	if c.MaxReceiveCount >= 1 && c.FunctionTimeout > 0 &&
		time.Duration(c.MaxReceiveCount)*c.VisibilityTimeout() >= c.QueueRetention {
		bad("MaxReceiveCount x VisibilityTimeout (%d x %s) must be less than QueueRetention (%s), or messages expire before reaching the DLQ",
			c.MaxReceiveCount, c.VisibilityTimeout(), c.QueueRetention)
	}
	if c.ReceiptRetention < c.QueueRetention {
		bad("ReceiptRetention (%s) must be >= QueueRetention (%s): a receipt must outlive every redelivery", c.ReceiptRetention, c.QueueRetention)
	}
	if c.Mode != ModeLease && c.Mode != ModeTransactional {
		bad("Mode must be %q or %q, got %q", ModeLease, ModeTransactional, c.Mode)
	}
	if c.EffectURL != "" && !isHTTPURL(c.EffectURL) {
		bad("EffectURL %q is not an absolute http(s) URL", c.EffectURL)
	}
	if c.AlarmTopicARN != "" && !isSNSTopicARN(c.AlarmTopicARN) {
		bad("AlarmTopicARN %q is not an SNS topic ARN (arn:<partition>:sns:<region>:<account>:<name>)", c.AlarmTopicARN)
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

// isHTTPURL is the rule of functions/internal/envconfig HTTPURL: an absolute
// http or https URL with a host.
func isHTTPURL(v string) bool {
	u, err := url.Parse(v)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// isSNSTopicARN checks the shape arn:<partition>:sns:<region>:<account>:<name>.
func isSNSTopicARN(v string) bool {
	p := strings.Split(v, ":")
	if len(p) != 6 || p[0] != "arn" || p[2] != "sns" {
		return false
	}
	for _, part := range p {
		if part == "" {
			return false
		}
	}
	return true
}
