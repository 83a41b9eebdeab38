package consumer

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// TestEMF: the line CloudWatch turns into the metrics the construct's
// dashboard and alarms read.
func TestEMF(t *testing.T) {
	hs := newHarness(t, map[string]string{EnvNamespace: "gift-cards"})
	hs.deliver(t, order("m1", "o-1"))
	var doc struct {
		AWS struct {
			Timestamp         int64
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name, Unit string }
			}
		} `json:"_aws"`
		Namespace string
		Executed  int
	}
	line := hs.metrics.String()
	if strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "\n") {
		t.Fatalf("want exactly one line, got %q", line)
	}
	if err := json.Unmarshal([]byte(line), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.AWS.Timestamp < time.Now().Add(-time.Minute).UnixMilli() {
		t.Errorf("timestamp %d is not in milliseconds", doc.AWS.Timestamp)
	}
	if len(doc.AWS.CloudWatchMetrics) != 1 {
		t.Fatalf("directives = %+v", doc.AWS.CloudWatchMetrics)
	}
	d := doc.AWS.CloudWatchMetrics[0]
	// Spelled out: teams' own dashboards and alarms read this namespace, so
	// a rename is a CHANGELOG entry, not an edit of MetricNamespace alone.
	if d.Namespace != "sqsidem" || len(d.Dimensions) != 1 || !slices.Equal(d.Dimensions[0], []string{DimensionFunctionName, DimensionNamespace}) {
		t.Errorf("directive = %+v", d)
	}
	var names []string
	for _, m := range d.Metrics {
		if m.Unit != "Count" {
			t.Errorf("metric %s unit %q", m.Name, m.Unit)
		}
		names = append(names, m.Name)
	}
	if !slices.Equal(names, Metrics()) {
		t.Errorf("metrics named %v, want %v", names, Metrics())
	}
	if doc.Executed != 1 || doc.Namespace != "gift-cards" {
		t.Errorf("values: Executed %d, Namespace %q", doc.Executed, doc.Namespace)
	}
}

// TestOutcomeMetrics: every outcome the library reports has its own
// metric, and every metric counts an outcome: none is always zero.
func TestOutcomeMetrics(t *testing.T) {
	for o := idem.Executed; o.String() != "unknown"; o++ {
		if _, ok := outcomeMetrics[o]; !ok {
			t.Errorf("outcome %s has no metric: it would count as Failed", o)
		}
	}
	if got, want := slices.Sorted(maps.Values(outcomeMetrics)), slices.Sorted(slices.Values(Metrics())); !slices.Equal(got, want) {
		t.Errorf("metrics counted %v\nwant %v", got, want)
	}
}

// TestRerunCountsEveryEntryIntoTheWindow: a re-run whose receipt failed
// counts as its outcome and as a re-run.
func TestRerunCountsEveryEntryIntoTheWindow(t *testing.T) {
	var c counts
	c.add(sqsbatch.RecordResult{Outcome: idem.Rerun, Rerun: true})
	c.add(sqsbatch.RecordResult{Outcome: idem.Unconfirmed, Rerun: true})
	c.add(sqsbatch.RecordResult{Outcome: idem.LeaseLost, Rerun: true})
	c.add(sqsbatch.RecordResult{Outcome: idem.Unconfirmed})
	n := c.snapshot()
	if n[MetricRerun] != 3 || n[MetricUnconfirmed] != 2 || n[MetricLeaseLost] != 1 {
		t.Fatalf("counts %v; want Rerun 3, Unconfirmed 2, LeaseLost 1", n)
	}
}
