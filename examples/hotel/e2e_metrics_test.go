//go:build e2e

package hotel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// waitMetrics sums the consumer's EMF lines in its CloudWatch logs, waiting
// until they count every message (the logs may trail the invocations).
func (c clients) waitMetrics(ctx context.Context, t *testing.T, s stack) map[string]int {
	t.Helper()
	for {
		totals, lines := c.metrics(ctx, t, s)
		if totals[consumer.MetricExecuted]+totals[consumer.MetricDuplicate] >= sent {
			t.Logf("%d EMF lines in /aws/lambda/%s", lines, s.function)
			return totals
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the consumer's EMF lines count %v in %d lines, want %d messages: %v", totals, lines, sent, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// metrics reads the consumer's log group: the sum of each metric over its
// EMF lines, and the number of lines. Each line must be what the dashboard
// and the alarms read (checkEMF).
func (c clients) metrics(ctx context.Context, t *testing.T, s stack) (map[string]int, int) {
	t.Helper()
	totals, lines := map[string]int{}, 0
	p := cloudwatchlogs.NewFilterLogEventsPaginator(c.logs, &cloudwatchlogs.FilterLogEventsInput{LogGroupName: aws.String("/aws/lambda/" + s.function)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("the consumer's logs: %v", err)
		}
		for _, e := range page.Events {
			var line map[string]json.RawMessage
			if json.Unmarshal([]byte(aws.ToString(e.Message)), &line) != nil || line["_aws"] == nil {
				continue
			}
			lines++
			if err := checkEMF(line, s); err != nil {
				t.Fatalf("EMF line %s: %v", aws.ToString(e.Message), err)
			}
			for _, m := range consumer.Metrics() {
				var n int
				if err := json.Unmarshal(line[m], &n); err != nil {
					t.Fatalf("EMF line %s: metric %s: %v", aws.ToString(e.Message), m, err)
				}
				totals[m] += n
			}
		}
	}
	return totals, lines
}

// checkEMF: namespace consumer.MetricNamespace, the dimensions FunctionName
// and Namespace with this consumer's values, every metric of
// consumer.Metrics, a timestamp.
func checkEMF(line map[string]json.RawMessage, s stack) error {
	var meta struct {
		Timestamp         int64
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
			Metrics    []struct{ Name, Unit string }
		}
	}
	if err := json.Unmarshal(line["_aws"], &meta); err != nil {
		return err
	}
	if meta.Timestamp == 0 || len(meta.CloudWatchMetrics) != 1 {
		return fmt.Errorf("want a timestamp and one directive")
	}
	d := meta.CloudWatchMetrics[0]
	want := [][]string{{consumer.DimensionFunctionName, consumer.DimensionNamespace}}
	if d.Namespace != consumer.MetricNamespace || fmt.Sprint(d.Dimensions) != fmt.Sprint(want) {
		return fmt.Errorf("namespace %q, dimensions %v; want %q, %v", d.Namespace, d.Dimensions, consumer.MetricNamespace, want)
	}
	var names []string
	for _, m := range d.Metrics {
		names = append(names, m.Name)
	}
	if !slices.Equal(names, consumer.Metrics()) {
		return fmt.Errorf("metrics %v, want %v", names, consumer.Metrics())
	}
	for dim, value := range map[string]string{consumer.DimensionFunctionName: s.function, consumer.DimensionNamespace: s.namespace} {
		var v string
		if err := json.Unmarshal(line[dim], &v); err != nil || v != value {
			return fmt.Errorf("dimension %s = %s, want %q", dim, line[dim], value)
		}
	}
	return nil
}

// readers lists, by metric, what of the deployed stack reads the
// consumer's EMF metrics (consumer.MetricNamespace): the dashboard's graphs
// (from the deployed template: LocalStack keeps no dashboards) and the
// alarms (as CloudWatch holds them). Each must name this consumer's
// FunctionName and Namespace.
func (c clients) readers(ctx context.Context, t *testing.T, s stack) map[string][]string {
	t.Helper()
	read := map[string][]string{}
	var tpl struct {
		Resources map[string]struct {
			Type       string
			Properties map[string]any
		}
	}
	if err := json.Unmarshal([]byte(s.template), &tpl); err != nil {
		t.Fatalf("the deployed template: %v", err)
	}
	var alarms []string
	for logical, r := range tpl.Resources {
		switch r.Type {
		case "AWS::CloudWatch::Alarm":
			alarms = append(alarms, s.physical[logical])
		case "AWS::CloudWatch::Dashboard":
			body, err := s.resolve(r.Properties["DashboardBody"])
			if err != nil {
				t.Fatalf("dashboard %s: %v", logical, err)
			}
			for _, name := range dashboardMetrics(t, body, s) {
				read[name] = append(read[name], "dashboard")
			}
		}
	}
	if len(read) == 0 {
		t.Fatalf("no dashboard graphs a %s metric", consumer.MetricNamespace)
	}
	out, err := c.cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNames: alarms})
	if err != nil || len(out.MetricAlarms) != len(alarms) {
		t.Fatalf("the stack's %d alarms: %d found, %v", len(alarms), len(out.MetricAlarms), err)
	}
	for _, a := range out.MetricAlarms {
		if aws.ToString(a.Namespace) != consumer.MetricNamespace {
			continue
		}
		dims := map[string]string{}
		for _, d := range a.Dimensions {
			dims[aws.ToString(d.Name)] = aws.ToString(d.Value)
		}
		if dims[consumer.DimensionFunctionName] != s.function || dims[consumer.DimensionNamespace] != s.namespace {
			t.Errorf("alarm %s reads %v, not this consumer's (%s, %s)", aws.ToString(a.AlarmName), dims, s.function, s.namespace)
		}
		name := aws.ToString(a.MetricName)
		read[name] = append(read[name], "alarm "+aws.ToString(a.AlarmName))
	}
	return read
}

// dashboardMetrics lists the consumer.MetricNamespace metrics a dashboard
// body graphs.
func dashboardMetrics(t *testing.T, body string, s stack) []string {
	t.Helper()
	var dash struct {
		Widgets []struct {
			Properties struct {
				Metrics [][]any `json:"metrics"`
			} `json:"properties"`
		} `json:"widgets"`
	}
	if err := json.Unmarshal([]byte(body), &dash); err != nil {
		t.Fatalf("dashboard body: %v", err)
	}
	var names []string
	for _, w := range dash.Widgets {
		for _, m := range w.Properties.Metrics {
			// [namespace, name, dimension, value, ..., {options}]
			if len(m) < 2 || m[0] != consumer.MetricNamespace {
				continue
			}
			dims := map[any]any{}
			for i := 2; i+1 < len(m); i += 2 {
				dims[m[i]] = m[i+1]
			}
			if dims[consumer.DimensionFunctionName] != s.function || dims[consumer.DimensionNamespace] != s.namespace {
				t.Errorf("the dashboard graphs %v, not this consumer's (%s, %s)", m, s.function, s.namespace)
			}
			names = append(names, fmt.Sprint(m[1]))
		}
	}
	return names
}

// resolve evaluates the intrinsic functions a CDK dashboard body holds:
// Fn::Join, Ref (a resource of the stack or a pseudo parameter) and
// Fn::GetAtt (left as a placeholder: alarm ARNs).
func (s stack) resolve(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case map[string]any:
		if ref, ok := v["Ref"].(string); ok {
			pseudo := map[string]string{"AWS::Region": "us-east-1", "AWS::AccountId": "000000000000", "AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com"}
			if p, ok := pseudo[ref]; ok {
				return p, nil
			}
			if p, ok := s.physical[ref]; ok {
				return p, nil
			}
			return "", fmt.Errorf("Ref %s: no such resource", ref)
		}
		if att, ok := v["Fn::GetAtt"].([]any); ok {
			return fmt.Sprintf("%v", att), nil
		}
		if join, ok := v["Fn::Join"].([]any); ok && len(join) == 2 {
			sep, _ := join[0].(string)
			parts, _ := join[1].([]any)
			var out []string
			for _, p := range parts {
				r, err := s.resolve(p)
				if err != nil {
					return "", err
				}
				out = append(out, r)
			}
			return strings.Join(out, sep), nil
		}
	}
	return "", fmt.Errorf("cannot resolve %v", v)
}
