package consumer

import (
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// This file is the contract between the CDK construct (infra/exactlyonce)
// and the runtime: every name both sides must spell the same. The
// construct imports them; a test synthesizes it and fails when it sets a
// variable Variables does not list or graphs a metric Metrics does not.

// Environment variables the runtime reads.
const (
	EnvStore             = "IDEM_STORE"              // StoreDynamoDB (default) or StoreRedis
	EnvTable             = "IDEM_TABLE"              // receipt table; required with StoreDynamoDB
	EnvRedisURL          = "IDEM_REDIS_URL"          // redis:// or rediss:// URL; required with StoreRedis
	EnvNamespace         = "IDEM_NAMESPACE"          // idem namespace, the metrics' Namespace dimension; default DefaultNamespace
	EnvMode              = "IDEM_MODE"               // ModeLease or ModeTransactional; default DefaultMode
	EnvKey               = "IDEM_KEY"                // the business key (KeyField); required unless the Effect has a Key function
	EnvRetention         = "IDEM_RETENTION"          // receipt TTL, a Go duration; default DefaultRetention
	EnvSafetyMargin      = "IDEM_SAFETY_MARGIN"      // lease end - effect deadline; default DefaultSafetyMargin
	EnvLease             = "IDEM_LEASE"              // explicit lease; default the remaining Lambda time
	EnvCacheSize         = "IDEM_CACHE_SIZE"         // completed keys kept in memory, 0 = off; default DefaultCacheSize
	EnvBatchConcurrency  = "IDEM_BATCH_CONCURRENCY"  // records of a batch run at once; default DefaultBatchConcurrency
	EnvMaxReceiveCount   = "IDEM_MAX_RECEIVE_COUNT"  // the queue's maxReceiveCount; 0 or unset: unknown
	EnvVisibilityTimeout = "IDEM_VISIBILITY_TIMEOUT" // the queue's visibility timeout, the store backoff's base; unset: unknown, no backoff
	EnvUnknownOutcome    = "IDEM_UNKNOWN_OUTCOME"    // UnknownRetry or UnknownHold; default DefaultUnknownOutcome
	EnvLogLevel          = "LOG_LEVEL"               // DEBUG, INFO, WARN or ERROR; default DefaultLogLevel
	EnvLogBodies         = "LOG_BODIES"              // log the bodies of failed records; default false
)

// Variables lists every variable the runtime reads, in the order above.
func Variables() []string {
	return []string{
		EnvStore, EnvTable, EnvRedisURL, EnvNamespace, EnvMode, EnvKey, EnvRetention, EnvSafetyMargin,
		EnvLease, EnvCacheSize, EnvBatchConcurrency, EnvMaxReceiveCount, EnvVisibilityTimeout, EnvUnknownOutcome,
		EnvLogLevel, EnvLogBodies,
	}
}

// What a lease-mode consumer does with an unknown outcome it could not
// reconcile (IDEM_UNKNOWN_OUTCOME, idem.WithUnknownOutcome).
const (
	// UnknownRetry runs the effect again after the lease: at least once in
	// the window (idem.Retry).
	UnknownRetry = "retry"
	// UnknownHold parks the key until an operator settles it (idemctl
	// resolve): at most once (idem.Hold).
	UnknownHold = "hold"
)

// UnknownOutcomes lists the policies.
func UnknownOutcomes() []string { return []string{UnknownRetry, UnknownHold} }

// What a consumer promises for each key while its receipt is retained,
// by its configuration (Guarantee): what the runtime logs at init (the
// line LogReady), and what the kit and the repository's suite check.
const (
	// GuaranteeExactlyOnce: transactional mode, or lease mode with a
	// Reconcile — as long as the remote system answers it; what it cannot
	// tell goes to the policy (a Rerun under UnknownRetry, Held under
	// UnknownHold).
	GuaranteeExactlyOnce = "exactly-once"
	// GuaranteeAtMostOnce: lease mode, UnknownHold, no Reconcile. An
	// unknown outcome (a crash, an error not marked idem.Definite) is held
	// for an operator (HELD, its messages in the dead-letter queue with
	// idem.ErrHeld); nothing runs twice.
	GuaranteeAtMostOnce = "at-most-once"
	// GuaranteeAtLeastOnce: lease mode, UnknownRetry, no Reconcile. An
	// unknown outcome is run again (outcome and metric Rerun): a crash
	// after the effect runs it twice; nothing is dead-lettered for it.
	GuaranteeAtLeastOnce = "at-least-once"
)

// Guarantee is what a consumer in mode, with the unknown-outcome policy
// unknown, promises, given whether its effect reconciles.
func Guarantee(mode, unknown string, reconciles bool) string {
	switch {
	case mode == ModeTransactional || reconciles:
		return GuaranteeExactlyOnce
	case unknown == UnknownHold:
		return GuaranteeAtMostOnce
	}
	return GuaranteeAtLeastOnce
}

// LogReady is the message of the line the runtime logs once at init,
// when its handler is built: its attributes are LogReadyAttrs, the
// configuration a proof reads from the deployed function itself.
const LogReady = "consumer ready"

// LogRerun is the message of the WARN line of a record whose effect ran
// again after an unknown outcome (outcome "rerun", with its storage_key):
// sqsbatch.LogRerun, named here with the other names a proof reads.
const LogRerun = sqsbatch.LogRerun

// The attributes of the LogReady line.
const (
	ReadyMode           = "mode"            // IDEM_MODE
	ReadyUnknownOutcome = "unknown_outcome" // IDEM_UNKNOWN_OUTCOME
	ReadyReconcile      = "reconcile"       // whether the effect has a Reconcile (lease mode)
	ReadyGuarantee      = "guarantee"       // Guarantee of the three
	ReadyNamespace      = "namespace"       // IDEM_NAMESPACE
	ReadyStore          = "store"           // IDEM_STORE
)

// Modes (IDEM_MODE).
const (
	// ModeLease runs any effect under a lease (Effect.Lease); a crash after
	// the effect and before the receipt can repeat it (the documented
	// window).
	ModeLease = "lease"
	// ModeTransactional commits an effect made of DynamoDB writes
	// (Effect.Tx) together with the receipt in one transaction: exactly
	// once, no window.
	ModeTransactional = "transactional"
)

// Modes lists the modes.
func Modes() []string { return []string{ModeLease, ModeTransactional} }

// Stores (IDEM_STORE).
const (
	StoreDynamoDB = "dynamodb" // pkg/idem/dynamostore; both modes
	StoreRedis    = "redis"    // pkg/idem/redisstore (Redis OSS, Valkey); lease mode only
)

// Defaults of the variables, shared by the runtime and the construct.
const (
	DefaultStore     = StoreDynamoDB
	DefaultNamespace = "consumer"
	DefaultMode      = ModeLease
	DefaultRetention = idem.DefaultRetention
	// DefaultSafetyMargin is longer than the library's own
	// (idem.DefaultSafetyMargin): a Lambda's clock and DynamoDB's round
	// trips under load leave less room than a test's.
	DefaultSafetyMargin     = 3 * time.Second
	DefaultCacheSize        = 1000
	DefaultBatchConcurrency = sqsbatch.DefaultConcurrency
	DefaultLogLevel         = "INFO"
	DefaultUnknownOutcome   = UnknownRetry
)

// The CloudWatch Embedded Metric Format line the runtime writes per batch:
// its namespace, and its dimensions in this order (the function, and the
// idem namespace, so that several consumers, or one table shared by several
// namespaces, graph apart).
const (
	MetricNamespace       = "sqsidem"
	DimensionFunctionName = "FunctionName"
	DimensionNamespace    = "Namespace"
)

// LegacyMetricNamespace is the metric namespace before v0.3.0, for a
// dashboard or alarm of your own that must span the upgrade: the runtime
// writes MetricNamespace only, from the first batch of the new version.
//
// Deprecated: use MetricNamespace. Removed in v0.4.0.
const LegacyMetricNamespace = "ExactlyOnce"

// Metric names: one count per batch, by the records' outcome.
const (
	MetricExecuted    = "Executed"    // the effect ran and its receipt was written
	MetricDuplicate   = "Duplicate"   // a receipt existed: skipped, result replayed
	MetricInProgress  = "InProgress"  // another attempt holds the lease: retried later
	MetricFailed      = "Failed"      // the effect failed: released, retried
	MetricStoreError  = "StoreError"  // the receipt store failed (after retries): retried
	MetricLeaseLost   = "LeaseLost"   // the effect outlived its lease and was fenced off
	MetricUnconfirmed = "Unconfirmed" // the effect ran but no receipt before the lease end
	MetricMismatch    = "Mismatch"    // same key, different payload: to the DLQ
	MetricRejected    = "Rejected"    // no valid key: to the DLQ
	MetricSkipped     = "Skipped"     // not run after an earlier record of its FIFO group or key failed
	MetricReconciled  = "Reconciled"  // an unknown outcome was asked about: it had taken place, receipt written
	MetricHeld        = "Held"        // an unknown outcome that could not be reconciled: the key is held
	MetricRerun       = "Rerun"       // an unknown outcome nobody could settle, run again (retry): the window; also counts a re-run then Unconfirmed or LeaseLost
)

// Metrics lists every metric the runtime emits, in the order it writes them.
func Metrics() []string {
	return []string{
		MetricExecuted, MetricDuplicate, MetricInProgress, MetricFailed, MetricStoreError,
		MetricLeaseLost, MetricUnconfirmed, MetricMismatch, MetricRejected, MetricSkipped,
		MetricReconciled, MetricHeld, MetricRerun,
	}
}

// Stack outputs the construct adds, by which an operator tool finds a
// consumer: the construct's id, then the suffix ("Orders" + OutputQueueURL);
// the id "Default" adds none. A suffix is the name of what it holds in the
// construct (Consumer.Receipts, Config.Namespace, Config.Key).
const (
	OutputTable              = "ReceiptTableName"
	OutputQueueURL           = "QueueUrl"
	OutputDeadLetterQueueURL = "DeadLetterQueueUrl"
	OutputFunctionName       = "ConsumerFunctionName"
	OutputNamespace          = "Namespace"
	OutputKey                = "Key" // only when the construct's Config.Key is set
)

// The suffixes of OutputTable, OutputNamespace and OutputKey before v0.3.0,
// which idemctl still reads from a stack deployed with them.
const (
	// Deprecated: use OutputTable. Removed in v0.4.0.
	LegacyOutputTable = "IdempotencyTableName"
	// Deprecated: use OutputNamespace. Removed in v0.4.0.
	LegacyOutputNamespace = "IdempotencyNamespace"
	// Deprecated: use OutputKey. Removed in v0.4.0.
	LegacyOutputKey = "IdempotencyKey"
)
