package contract

// MetricNamespace is the CloudWatch namespace of the consumer's Embedded
// Metric Format lines.
const MetricNamespace = "ExactlyOnce"

// Dimensions of every metric, in this order: the consumer's function name
// and its idem namespace (IDEM_NAMESPACE), so that several consumers in one
// account, or one table shared by several namespaces, graph apart.
const (
	DimensionFunctionName = "FunctionName"
	DimensionNamespace    = "Namespace"
)

// Metric names: one count per record and batch, by outcome.
const (
	MetricExecuted    = "Executed"    // the effect ran and its receipt was written
	MetricDuplicate   = "Duplicate"   // a receipt existed: skipped, result replayed
	MetricInProgress  = "InProgress"  // another attempt holds the lease: retried later
	MetricFailed      = "Failed"      // the effect failed: released, retried
	MetricStoreError  = "StoreError"  // the receipt store failed (after SDK retries): retried
	MetricLeaseLost   = "LeaseLost"   // the effect outlived its lease and was fenced off
	MetricUnconfirmed = "Unconfirmed" // the effect ran but no receipt before the lease end
	MetricMismatch    = "Mismatch"    // same key, different payload: to the DLQ
	MetricRejected    = "Rejected"    // no valid key or body: to the DLQ
	MetricSkipped     = "Skipped"     // FIFO: not run after an earlier record of its group failed
)

// OutcomeMetrics lists every metric name above, in the order the consumer
// writes them.
func OutcomeMetrics() []string {
	return []string{
		MetricExecuted, MetricDuplicate, MetricInProgress, MetricFailed, MetricStoreError,
		MetricLeaseLost, MetricUnconfirmed, MetricMismatch, MetricRejected, MetricSkipped,
	}
}
