package consumer

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"sync"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// outcomeMetrics names the metric counting each outcome. sqsbatch reports
// a record it did not run, because an earlier record of its FIFO group or
// key failed, with outcome 0: Skipped.
var outcomeMetrics = map[idem.Outcome]string{
	idem.Executed:    MetricExecuted,
	idem.Duplicate:   MetricDuplicate,
	idem.InProgress:  MetricInProgress,
	idem.Failed:      MetricFailed,
	idem.StoreError:  MetricStoreError,
	idem.LeaseLost:   MetricLeaseLost,
	idem.Unconfirmed: MetricUnconfirmed,
	idem.Mismatch:    MetricMismatch,
	idem.Rejected:    MetricRejected,
	idem.Reconciled:  MetricReconciled,
	idem.Held:        MetricHeld,
	idem.Rerun:       MetricRerun,
	0:                MetricSkipped,
}

// metricOf is the metric counting r. An outcome outcomeMetrics lacks (none
// today; a test checks) counts as Failed, never as nothing.
func metricOf(r sqsbatch.RecordResult) string {
	if m, ok := outcomeMetrics[r.Outcome]; ok {
		return m
	}
	return MetricFailed
}

// counts are the records of one batch by metric name. Records finish
// concurrently.
type counts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counts) add(r sqsbatch.RecordResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = make(map[string]int)
	}
	c.n[metricOf(r)]++
	if r.Rerun && r.Outcome != idem.Rerun {
		// A re-run whose receipt failed counts as Unconfirmed or LeaseLost
		// and as a re-run: Rerun counts every time the window was entered.
		c.n[MetricRerun]++
	}
}

func (c *counts) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.n) // nil for no records; reading it gives 0
}

// emf writes CloudWatch Embedded Metric Format lines: one JSON object per
// line on stdout, which CloudWatch Logs turns into metrics without an API
// call (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html).
type emf struct {
	mu        sync.Mutex
	w         io.Writer
	function  string // DimensionFunctionName
	namespace string // DimensionNamespace: the idem namespace
	now       func() time.Time
}

// attrRequestID names the request id of an invocation in its log lines
// (as sqsbatch spells it) and in its EMF line.
const attrRequestID = "request_id"

type emfMetric struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

type emfDirective struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []emfMetric `json:"Metrics"`
}

type emfMetadata struct {
	Timestamp         int64          `json:"Timestamp"`
	CloudWatchMetrics []emfDirective `json:"CloudWatchMetrics"`
}

// emit writes one line with the batch's counts, zeros included, so that a
// graph shows 0 rather than no data. requestID, when set, goes in as a
// property, neither a metric nor a dimension: with several invocations in
// one process (Lambda Managed Instances) their lines interleave, and it
// tells which batch a line counts.
func (m *emf) emit(n map[string]int, requestID string) error {
	doc := map[string]any{
		DimensionFunctionName: m.function,
		DimensionNamespace:    m.namespace,
	}
	if requestID != "" {
		doc[attrRequestID] = requestID
	}
	dir := emfDirective{
		Namespace:  MetricNamespace,
		Dimensions: [][]string{{DimensionFunctionName, DimensionNamespace}},
	}
	for _, name := range Metrics() {
		dir.Metrics = append(dir.Metrics, emfMetric{Name: name, Unit: "Count"})
		doc[name] = n[name]
	}
	doc["_aws"] = emfMetadata{Timestamp: m.now().UnixMilli(), CloudWatchMetrics: []emfDirective{dir}}
	line, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("consumer: metrics: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.w.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("consumer: metrics: %w", err)
	}
	return nil
}
