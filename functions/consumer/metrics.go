package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// MetricNamespace is the CloudWatch namespace of the consumer's metrics.
const MetricNamespace = "ExactlyOnce"

// metricTable lists the metrics of one batch in EMF order, each with the
// outcome it counts. Skipped (outcome 0) counts FIFO records not run because
// an earlier record of their group failed; Rejected counts records without a
// valid key or order.
var metricTable = [...]struct {
	outcome idem.Outcome
	name    string
}{
	{idem.Executed, "Executed"},
	{idem.Duplicate, "Duplicate"},
	{idem.InProgress, "InProgress"},
	{idem.Failed, "Failed"},
	{idem.StoreError, "StoreError"},
	{idem.LeaseLost, "LeaseLost"},
	{idem.Unconfirmed, "Unconfirmed"},
	{idem.Mismatch, "Mismatch"},
	{idem.Rejected, "Rejected"},
	{0, "Skipped"},
}

// metricNames are the names of metricTable, in its order.
var metricNames = func() (names [len(metricTable)]string) {
	for i, m := range metricTable {
		names[i] = m.name
	}
	return names
}()

// metricIndex is the index in metricTable of r's outcome. An outcome the
// table lacks (none today) counts as Failed.
func metricIndex(r sqsbatch.RecordResult) int {
	failed := -1
	for i, m := range metricTable {
		switch m.outcome {
		case r.Outcome:
			return i
		case idem.Failed:
			failed = i
		}
	}
	return failed
}

// counts are the outcomes of one batch. Records finish concurrently.
type counts struct {
	mu sync.Mutex
	n  [len(metricNames)]int
}

func (c *counts) add(r sqsbatch.RecordResult) {
	c.mu.Lock()
	c.n[metricIndex(r)]++
	c.mu.Unlock()
}

func (c *counts) snapshot() [len(metricNames)]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// Metrics writes CloudWatch Embedded Metric Format lines: one JSON object
// per line on stdout, which CloudWatch Logs turns into metrics without an
// API call (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html).
type Metrics struct {
	mu        sync.Mutex
	w         io.Writer
	function  string // FunctionName dimension
	namespace string // Namespace dimension: the idem namespace
	now       func() time.Time
}

// NewMetrics returns Metrics writing to w with the two dimensions.
func NewMetrics(w io.Writer, function, namespace string) *Metrics {
	return &Metrics{w: w, function: function, namespace: namespace, now: time.Now}
}

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
// graph shows 0 rather than no data.
func (m *Metrics) emit(c *counts) error {
	n := c.snapshot()
	doc := map[string]any{
		"FunctionName": m.function,
		"Namespace":    m.namespace,
	}
	dir := emfDirective{
		Namespace:  MetricNamespace,
		Dimensions: [][]string{{"FunctionName", "Namespace"}},
	}
	for i, name := range metricNames {
		dir.Metrics = append(dir.Metrics, emfMetric{Name: name, Unit: "Count"})
		doc[name] = n[i]
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
