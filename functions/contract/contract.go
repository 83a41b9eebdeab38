// Package contract is the one place that names what the stack (infra/) and
// the functions (functions/) must agree on: the environment variables the
// stack sets and the functions read, their defaults, the idempotency
// namespaces and modes, and the metrics the consumer emits and the stack
// alarms on.
//
// Both sides import it, so a renamed variable or metric is a compile error on
// both, never a function that silently reads its default. LoadConsumer and
// LoadProducer are how the functions read their environment; the infra
// tests run them on the environment of the synthesized stack
// (infra/envcontract_test.go), so a variable one side sets and the other
// ignores, or one that is required and not set, fails a test. The package
// imports only the standard library, pkg/idem (for the library's own
// defaults) and functions/internal/envconfig, so a Lambda and a CDK app can
// both depend on it.
package contract

import (
	"net/url"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// Environment variables read by both functions.
const (
	EnvIdemTable    = "IDEM_TABLE"         // receipt table name; required
	EnvNamespace    = "IDEM_NAMESPACE"     // idem namespace; default the function's own
	EnvRetention    = "IDEM_RETENTION"     // receipt TTL, a Go duration; default DefaultRetention
	EnvSafetyMargin = "IDEM_SAFETY_MARGIN" // lease end - effect deadline; default DefaultSafetyMargin
	EnvLease        = "IDEM_LEASE"         // explicit lease; default the remaining Lambda time
	EnvCacheSize    = "IDEM_CACHE_SIZE"    // completed keys kept in memory, 0 = off; default DefaultCacheSize
	EnvLogLevel     = "LOG_LEVEL"          // DEBUG, INFO, WARN or ERROR; default DefaultLogLevel
)

// Environment variables read by the consumer only.
const (
	EnvLedgerTable      = "LEDGER_TABLE"      // the example effect's table; required
	EnvMode             = "IDEM_MODE"         // ModeLease or ModeTransactional; default DefaultMode
	EnvBatchConcurrency = "BATCH_CONCURRENCY" // records of a batch run at once; default DefaultBatchConcurrency
	EnvLogBodies        = "LOG_BODIES"        // log message bodies; default false
	EnvEffectURL        = "EFFECT_URL"        // optional; an absolute http(s) URL (IsHTTPURL)
)

// Environment variables read by the producer only.
const (
	EnvQueueURL            = "QUEUE_URL"            // queue to send to; required, an absolute http(s) URL
	EnvProducerConcurrency = "PRODUCER_CONCURRENCY" // orders guarded at once; default DefaultProducerConcurrency
	EnvSendAttempts        = "SEND_ATTEMPTS"        // tries per message; default DefaultSendAttempts
)

// Idempotency namespaces (IDEM_NAMESPACE) of the two functions. They must
// differ: both share the receipt table and key their receipts by orderId,
// so with one namespace every consumer delivery would find the producer's
// receipt for the same order and be skipped as a duplicate.
const (
	ConsumerNamespace = "consumer"
	ProducerNamespace = "producer"
)

// Modes of the consumer (IDEM_MODE).
const (
	// ModeLease runs any effect under a lease; a crash after the effect and
	// before the receipt can repeat it (the documented window).
	ModeLease = "lease"
	// ModeTransactional commits DynamoDB effects together with the receipt
	// in one transaction: exactly once, but DynamoDB writes only.
	ModeTransactional = "transactional"
)

// Defaults of the variables above, used by the functions when a variable is
// unset and by the stack where it does not derive a value of its own.
const (
	DefaultMode                = ModeLease
	DefaultRetention           = idem.DefaultRetention
	DefaultSafetyMargin        = idem.DefaultSafetyMargin
	DefaultCacheSize           = 1000
	DefaultBatchConcurrency    = 10
	DefaultLogLevel            = "INFO"
	DefaultProducerConcurrency = 50
	DefaultSendAttempts        = 3
)

// ValidMode reports whether m is ModeLease or ModeTransactional. The
// comparison is exact: the stack writes the lower-case names.
func ValidMode(m string) bool {
	return m == ModeLease || m == ModeTransactional
}

// IsHTTPURL is the rule for EFFECT_URL and QUEUE_URL: an absolute http or
// https URL with a host. The stack checks it at synth time, the functions at
// start, so a bad value fails the deploy rather than the first message.
func IsHTTPURL(v string) bool {
	u, err := url.Parse(v)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}
