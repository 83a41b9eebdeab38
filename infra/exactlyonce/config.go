package exactlyonce

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// visibilityMultiplier is the AWS guidance for SQS event sources: the queue's
// visibility timeout should be at least six times the function timeout, so a
// message is not redelivered while a (retried, throttled) invocation still
// holds it.
const visibilityMultiplier = 6

// DefaultRunbookURL is the runbook of this repository (cmd/idemctl), which
// has a section for every alarm the construct creates.
const DefaultRunbookURL = "https://github.com/exactlyonce/sqsidem/blob/main/cmd/idemctl/RUNBOOK.md"

// maxRunbookURLLen keeps every alarm description (the runbook link and a
// sentence or two) within CloudWatch's 1024 characters.
const maxRunbookURLLen = 512

// tracingModes are the values Config.Tracing takes.
var tracingModes = []awslambda.Tracing{awslambda.Tracing_ACTIVE, awslambda.Tracing_PASS_THROUGH, awslambda.Tracing_DISABLED}

// Config is the single source of truth for a consumer. Everything that must
// agree between resources (queue visibility vs. function timeout, receipt TTL
// vs. what the library is told) is derived from these fields, never stored
// twice. A zero field takes its value from DefaultConfig.
type Config struct {
	// FunctionTimeout is the Lambda timeout T. Whole seconds.
	FunctionTimeout time.Duration
	// MaxReceiveCount is how often SQS delivers a message before moving it to
	// the dead-letter queue.
	MaxReceiveCount int
	// QueueRetention is how long the queue keeps a message.
	QueueRetention time.Duration
	// ReceiptRetention is how long a receipt lives (DynamoDB TTL). It must
	// outlive every possible redelivery, hence >= QueueRetention.
	//
	// It is deliberately not tied to DLQRetention: redriving the DLQ back to
	// the queue is only safe within ReceiptRetention of a message's first
	// delivery. After that its receipt is gone (TTL), so a redriven message
	// whose effect was already applied would be applied again.
	ReceiptRetention time.Duration
	// DLQRetention is how long failed messages wait for an operator. It must
	// exceed QueueRetention: on a standard queue a dead-lettered message
	// keeps its original enqueue timestamp, so the DLQ's retention counts
	// from the first enqueue, not from the move to the DLQ.
	DLQRetention time.Duration
	// BatchSize is the SQS batch size of the event source mapping (1..10);
	// the consumer processes a batch with this much concurrency.
	BatchSize int
	// MaxConcurrency caps concurrent consumer invocations (ESM scaling
	// config), in standard mode. With provisioned pollers (MinPollers,
	// MaxPollers) it must be 0: the service refuses a mapping with both,
	// and MaxPollers bounds the concurrency instead; WithDefaults then
	// leaves it 0.
	MaxConcurrency int
	// MinPollers and MaxPollers turn on the event source mapping's
	// provisioned mode: dedicated event pollers, at least MinPollers (2..200)
	// and at most MaxPollers (2..2000), each invoking up to 10 batches at
	// once; Lambda scales between the two. Setting either turns it on; the
	// other then takes the service's default (2, 200). Both 0: standard
	// mode, scaled by Lambda up to MaxConcurrency.
	MinPollers int
	MaxPollers int
	// ReservedConcurrency reserves (and caps) the consumer's concurrency; 0
	// reserves none. It must be at least the batches the mapping invokes at
	// once (MappingConcurrency): below it Lambda throttles the mapping's
	// invocations, and a throttled batch goes back to the queue with its
	// receive count raised, so healthy messages reach the DLQ. Not on
	// Managed Instances (there ManagedInstances.MaxEnvironments caps it).
	ReservedConcurrency int
	// MemoryMB is the consumer's memory: 128..10240 on Lambda's default
	// compute; on Managed Instances an execution environment's, 2048..32768
	// and whole vCPUs of ManagedInstances.MemoryGiBPerVCPU (default: one).
	MemoryMB int
	// ManagedInstances runs the consumer on Lambda Managed Instances when
	// its Concurrency is set (the capacity provider is
	// ConsumerProps.Instances): one execution environment, one process,
	// runs Concurrency invocations at once. Zero: Lambda's default compute.
	ManagedInstances ManagedInstances
	// SafetyMargin is subtracted from the invocation deadline when the
	// library sizes its lease, so a lease never outlives the invocation.
	SafetyMargin time.Duration
	// Mode is consumer.ModeLease or consumer.ModeTransactional (IDEM_MODE).
	Mode string
	// UnknownOutcome is what a lease-mode consumer does with an unknown
	// outcome the effect's Reconcile cannot settle (IDEM_UNKNOWN_OUTCOME):
	// consumer.UnknownRetry runs the effect again (at least once in the
	// window), consumer.UnknownHold parks the key for an operator
	// (AlarmHeld; at most once). Transactional mode never leaves an
	// unknown outcome, so Validate refuses UnknownHold there rather than
	// let it promise what it would never do.
	UnknownOutcome string
	// Namespace is the consumer's idem namespace (IDEM_NAMESPACE, metrics
	// dimension). Another function sharing the receipt table needs its own.
	Namespace string
	// Key is the business key: the message attribute, else the body's
	// top-level JSON field, that identifies an effect (IDEM_KEY, read by
	// consumer.KeyField, and a stack output). Empty: the function's effect
	// brings its own key function.
	Key string
	// AlarmTopicARN is an optional existing SNS topic every alarm notifies;
	// empty means the alarms have no actions.
	AlarmTopicARN string
	// AlarmRerunThreshold is how many re-runs in a minute AlarmRerun lets
	// pass: it fires on more. A re-run (outcome and metric Rerun) is an
	// unknown outcome nobody could settle, run again under UnknownOutcome
	// retry: the window, entered, and for that key the effect may have
	// taken place twice. 0, the default, fires on the first, so that
	// every re-run is a key someone checks downstream; a team that accepts
	// some of the window's cost says how many a minute. There is no off
	// (a large value is one). Only UnknownOutcome retry in lease mode ever
	// re-runs an effect, so Validate refuses a positive value with
	// UnknownHold or in transactional mode: a Rerun there breaks the
	// promise, and the first must alarm.
	AlarmRerunThreshold int
	// RunbookURL is the runbook every alarm's description links to, as
	// <RunbookURL>#<alarm id in lower case> (GitHub's anchor of a heading
	// "## AlarmLeaseLost"). An absolute http(s) URL without a fragment; a
	// team that forks or hosts its own runbook sets its own.
	RunbookURL string
	// Tracing is the consumer function's X-Ray tracing:
	// awslambda.Tracing_ACTIVE (sampled here), Tracing_PASS_THROUGH (traced
	// only when the caller sampled) or Tracing_DISABLED (no X-Ray, and no
	// X-Ray permissions on the role).
	Tracing awslambda.Tracing
	// RemovalPolicy applies to the tables, queues and log group.
	RemovalPolicy awscdk.RemovalPolicy
	// LogRetention of the consumer's log group.
	LogRetention awslogs.RetentionDays
}

// DefaultConfig is the production profile, and the value of every field a
// Config leaves zero (except ReservedConcurrency and AlarmTopicARN, whose
// zero means none; MinPollers, MaxPollers and ManagedInstances, whose zero
// is the default compute and standard mode; and MaxConcurrency in
// provisioned mode, where it must stay 0).
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
		SafetyMargin:     consumer.DefaultSafetyMargin,
		Mode:             consumer.DefaultMode,
		UnknownOutcome:   consumer.DefaultUnknownOutcome,
		Namespace:        consumer.DefaultNamespace,
		RunbookURL:       DefaultRunbookURL,
		Tracing:          awslambda.Tracing_ACTIVE,
		RemovalPolicy:    awscdk.RemovalPolicy_RETAIN,
		LogRetention:     awslogs.RetentionDays_ONE_MONTH,
	}
}

// WithDefaults returns c with every zero field set from DefaultConfig; in
// provisioned mode MinPollers and MaxPollers take the service's defaults (2
// and 200) and MaxConcurrency stays as it is, and on Managed Instances
// MemoryGiBPerVCPU takes 2 and MemoryMB one vCPU of it (at least 2048).
func (c Config) WithDefaults() Config {
	d := DefaultConfig()
	orDefault(&c.FunctionTimeout, d.FunctionTimeout)
	orDefault(&c.MaxReceiveCount, d.MaxReceiveCount)
	orDefault(&c.QueueRetention, d.QueueRetention)
	orDefault(&c.ReceiptRetention, d.ReceiptRetention)
	orDefault(&c.DLQRetention, d.DLQRetention)
	orDefault(&c.BatchSize, d.BatchSize)
	if c.Provisioned() {
		// The service's defaults, written out so that the template,
		// the dashboard and Validate see the numbers in force.
		orDefault(&c.MinPollers, defaultMinPollers)
		orDefault(&c.MaxPollers, defaultMaxPollers)
	} else {
		orDefault(&c.MaxConcurrency, d.MaxConcurrency)
	}
	if c.OnManagedInstances() {
		orDefault(&c.ManagedInstances.MemoryGiBPerVCPU, defaultMemoryGiBPerVCPU)
		// One vCPU, and at least the 2 GiB an environment needs.
		orDefault(&c.MemoryMB, max(managedMinMemoryMB, c.ManagedInstances.MemoryGiBPerVCPU*1024))
	}
	orDefault(&c.MemoryMB, d.MemoryMB)
	orDefault(&c.SafetyMargin, d.SafetyMargin)
	orDefault(&c.Mode, d.Mode)
	orDefault(&c.UnknownOutcome, d.UnknownOutcome)
	orDefault(&c.Namespace, d.Namespace)
	orDefault(&c.RunbookURL, d.RunbookURL)
	orDefault(&c.Tracing, d.Tracing)
	orDefault(&c.RemovalPolicy, d.RemovalPolicy)
	orDefault(&c.LogRetention, d.LogRetention)
	return c
}

func orDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// VisibilityTimeout of the queue: 6 x FunctionTimeout.
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

// Validate reports every violated constraint at once. It checks c as it is;
// NewConsumer validates c.WithDefaults().
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
	case t > 15*time.Minute && !c.OnManagedInstances():
		bad("FunctionTimeout must be at most 15m (Lambda limit), got %s", t)
	case t > managedMaxTimeout:
		bad("FunctionTimeout must be at most 90m on Managed Instances (their limit for invocations by an event source mapping), got %s", t)
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
	errs = append(errs, c.validateScaling()...)
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
	if !slices.Contains(consumer.Modes(), c.Mode) {
		bad("Mode must be one of %v, got %q", consumer.Modes(), c.Mode)
	}
	switch {
	case !slices.Contains(consumer.UnknownOutcomes(), c.UnknownOutcome):
		bad("UnknownOutcome must be one of %v, got %q", consumer.UnknownOutcomes(), c.UnknownOutcome)
	case c.UnknownOutcome == consumer.UnknownHold && c.Mode == consumer.ModeTransactional:
		// The effect commits with its receipt, or not at all: no attempt
		// leaves an outcome to hold.
		bad("UnknownOutcome %q has no effect in %s mode, which never leaves an unknown outcome: leave it empty or %q",
			c.UnknownOutcome, c.Mode, consumer.UnknownRetry)
	}
	if c.Namespace == "" || strings.Contains(c.Namespace, idem.KeySeparator) || len(c.Namespace) > idem.MaxNamespaceLen {
		// Receipts are keyed namespace#hash(key).
		bad("Namespace must be non-empty, without %q and at most %d bytes, got %q", idem.KeySeparator, idem.MaxNamespaceLen, c.Namespace)
	}
	if strings.TrimSpace(c.Key) != c.Key {
		bad("Key must not start or end with white space, got %q", c.Key)
	}
	switch n := c.AlarmRerunThreshold; {
	case n < 0:
		bad("AlarmRerunThreshold must be 0 (AlarmRerun fires on the first re-run) or the number of re-runs a minute it lets pass, got %d", n)
	case n > 0 && c.Mode == consumer.ModeTransactional:
		bad("AlarmRerunThreshold (%d) lets re-runs pass, but %s mode never re-runs an effect: a Rerun there is a broken promise, and AlarmRerun must fire on the first; leave it 0",
			n, c.Mode)
	case n > 0 && c.UnknownOutcome == consumer.UnknownHold:
		bad("AlarmRerunThreshold (%d) lets re-runs pass, but UnknownOutcome %q never re-runs an effect: a Rerun there is a broken promise, and AlarmRerun must fire on the first; leave it 0",
			n, c.UnknownOutcome)
	}
	if c.AlarmTopicARN != "" && !isToken(c.AlarmTopicARN) && !isSNSTopicARN(c.AlarmTopicARN) {
		bad("AlarmTopicARN %q is not an SNS topic ARN (arn:<partition>:sns:<region>:<account>:<name>)", c.AlarmTopicARN)
	}
	if err := checkRunbookURL(c.RunbookURL); err != nil {
		bad("RunbookURL %q %v", c.RunbookURL, err)
	}
	if !slices.Contains(tracingModes, c.Tracing) {
		bad("Tracing must be one of %v, got %q", tracingModes, c.Tracing)
	}
	if c.RemovalPolicy == "" {
		bad("RemovalPolicy must be set")
	}
	if c.LogRetention == "" {
		bad("LogRetention must be set")
	}
	return errors.Join(errs...)
}

// checkRunbookURL: the alarms append "#<anchor>", so the URL must be
// absolute, http(s), and without a fragment of its own.
func checkRunbookURL(v string) error {
	const want = "must be an absolute http(s) URL without a fragment (the alarms add #<alarm id>)"
	u, err := url.Parse(v)
	switch {
	case v == "":
		return errors.New("must be set, e.g. " + DefaultRunbookURL)
	case err != nil:
		return fmt.Errorf("%s: %w", want, err)
	case u.Scheme != "https" && u.Scheme != "http", u.Host == "":
		return errors.New(want)
	case u.User != nil:
		return errors.New("must not hold user information: every alarm shows it")
	case strings.Contains(v, "#"):
		return errors.New(want + ": it has one")
	case strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return errors.New(want + ": it has white space or control characters")
	case len(v) > maxRunbookURLLen:
		return fmt.Errorf("must be at most %d bytes (an alarm description is at most 1024), got %d", maxRunbookURLLen, len(v))
	}
	return nil
}

// isToken: a value only known at deploy time (e.g. *topic.TopicArn()) cannot
// be checked at synth time.
func isToken(v string) bool {
	return *awscdk.Token_IsUnresolved(jsii.String(v))
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
