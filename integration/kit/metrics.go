package kit

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// LogsAPI is what the kit asks of CloudWatch Logs: the consumer's EMF
// lines.
type LogsAPI = cloudwatchlogs.FilterLogEventsAPIClient

// AlarmsAPI is what the kit asks of CloudWatch.
type AlarmsAPI interface {
	DescribeAlarms(context.Context, *cloudwatch.DescribeAlarmsInput, ...func(*cloudwatch.Options)) (*cloudwatch.DescribeAlarmsOutput, error)
}

var (
	_ LogsAPI   = (*cloudwatchlogs.Client)(nil)
	_ AlarmsAPI = (*cloudwatch.Client)(nil)
)

// metrics: the EMF lines of this run count every message (expected's
// checkTotals, by what the promise allows; a crashed receive writes none,
// so a key whose first receive crashed is counted once, by the attempt
// after), and whatever of the stack reads this consumer's metrics
// (dashboard, alarms) reads ones the lines carry.
func (r *run) metrics(ctx context.Context, t *testing.T) {
	var scan logScan
	wait(ctx, t, "the EMF lines of every message", time.Second, func() (bool, string, error) {
		var err error
		scan, err = r.scanLogs(ctx)
		if err != nil {
			return false, "", err
		}
		return r.want.reached(scan.totals, r.facts(scan)), fmt.Sprintf("%d lines count %v", scan.lines, scan.totals), nil
	})
	t.Logf("%d EMF lines of this run in /aws/lambda/%s count %v", scan.lines, r.st.Function, scan.totals)
	if err := r.want.checkTotals(scan.totals, r.facts(scan)); err != nil {
		t.Error(err)
	}
	read, err := r.readers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range slices.Sorted(maps.Keys(read)) {
		if !slices.Contains(consumer.Metrics(), m) {
			t.Errorf("%s reads %s, which no EMF line carries", strings.Join(read[m], ", "), m)
		}
	}
	t.Logf("this consumer's metrics the stack's dashboards and alarms read: %v", read)
}

// logScan is what the consumer's log group says of this run.
type logScan struct {
	totals map[string]int // each metric summed over the EMF lines
	lines  int            // EMF lines
	reruns map[string]int // storage key -> "rerun" lines (logRerun)
}

// logRerun is the message of the line sqsbatch logs, at WARN, for a
// record whose effect ran again after an unknown outcome (outcome
// "rerun", with its storage_key): the window of the retry policy.
const logRerun = consumer.LogRerun

// scanLogs reads the lines the consumer wrote since the run started: the
// EMF lines, each checked by parseEMF, and the rerun lines.
func (r *run) scanLogs(ctx context.Context) (logScan, error) {
	scan := logScan{totals: map[string]int{}, reruns: map[string]int{}}
	since := r.start.Add(-time.Second).UnixMilli()
	p := cloudwatchlogs.NewFilterLogEventsPaginator(r.logs, &cloudwatchlogs.FilterLogEventsInput{
		LogGroupName: aws.String("/aws/lambda/" + r.st.Function), StartTime: aws.Int64(since),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return logScan{}, fmt.Errorf("the consumer's logs: %w", err)
		}
		for _, e := range page.Events {
			msg := aws.ToString(e.Message)
			if skey, ok := parseRerun(msg); ok {
				scan.reruns[skey]++
				continue
			}
			counts, at, ok, err := parseEMF(msg, r.st.Function, r.st.Namespace)
			if err != nil {
				return logScan{}, fmt.Errorf("EMF line %s: %w", msg, err)
			}
			if !ok || at < since {
				continue
			}
			scan.lines++
			for m, n := range counts {
				scan.totals[m] += n
			}
		}
	}
	return scan, nil
}

// parseRerun reads a log line: the storage key of a rerun line.
func parseRerun(msg string) (skey string, ok bool) {
	var l struct {
		Msg        string `json:"msg"`
		Outcome    string `json:"outcome"`
		StorageKey string `json:"storage_key"`
	}
	if json.Unmarshal([]byte(msg), &l) != nil || l.Msg != logRerun || l.Outcome != idem.Rerun.String() || l.StorageKey == "" {
		return "", false
	}
	return l.StorageKey, true
}

// parseEMF reads a log line: ok is false for a line that is not EMF. An
// EMF line must be what the dashboard and the alarms read: one directive
// of namespace consumer.MetricNamespace, the dimensions FunctionName and
// Namespace with this consumer's values, every metric of consumer.Metrics
// with its count, a timestamp (at, in Unix milliseconds).
func parseEMF(msg, function, namespace string) (counts map[string]int, at int64, ok bool, err error) {
	var line map[string]json.RawMessage
	if json.Unmarshal([]byte(msg), &line) != nil || line["_aws"] == nil {
		return nil, 0, false, nil
	}
	var meta struct {
		Timestamp         int64
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
			Metrics    []struct{ Name, Unit string }
		}
	}
	if err := json.Unmarshal(line["_aws"], &meta); err != nil {
		return nil, 0, true, err
	}
	if meta.Timestamp == 0 || len(meta.CloudWatchMetrics) != 1 {
		return nil, 0, true, fmt.Errorf("want a timestamp and one directive")
	}
	d := meta.CloudWatchMetrics[0]
	want := [][]string{{consumer.DimensionFunctionName, consumer.DimensionNamespace}}
	if d.Namespace != consumer.MetricNamespace || fmt.Sprint(d.Dimensions) != fmt.Sprint(want) {
		return nil, 0, true, fmt.Errorf("namespace %q, dimensions %v; want %q, %v", d.Namespace, d.Dimensions, consumer.MetricNamespace, want)
	}
	var names []string
	for _, m := range d.Metrics {
		names = append(names, m.Name)
	}
	if !slices.Equal(names, consumer.Metrics()) {
		return nil, 0, true, fmt.Errorf("metrics %v, want %v", names, consumer.Metrics())
	}
	for dim, value := range map[string]string{consumer.DimensionFunctionName: function, consumer.DimensionNamespace: namespace} {
		var v string
		if err := json.Unmarshal(line[dim], &v); err != nil || v != value {
			return nil, 0, true, fmt.Errorf("dimension %s = %s, want %q", dim, line[dim], value)
		}
	}
	counts = map[string]int{}
	for _, m := range consumer.Metrics() {
		var n int
		if err := json.Unmarshal(line[m], &n); err != nil {
			return nil, 0, true, fmt.Errorf("metric %s: %w", m, err)
		}
		counts[m] = n
	}
	return counts, meta.Timestamp, true, nil
}
