package kit

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// emfLine is a line as the runtime writes it, changed by change.
func emfLine(t *testing.T, change func(map[string]any)) string {
	t.Helper()
	var metrics []map[string]string
	line := map[string]any{consumer.DimensionFunctionName: "fn", consumer.DimensionNamespace: "bookings"}
	for _, m := range consumer.Metrics() {
		metrics = append(metrics, map[string]string{"Name": m, "Unit": "Count"})
		line[m] = 0
	}
	line[consumer.MetricExecuted], line[consumer.MetricDuplicate] = 2, 3
	line["_aws"] = map[string]any{"Timestamp": 1700000000000, "CloudWatchMetrics": []any{map[string]any{
		"Namespace": consumer.MetricNamespace, "Dimensions": [][]string{{consumer.DimensionFunctionName, consumer.DimensionNamespace}}, "Metrics": metrics,
	}}}
	if change != nil {
		change(line)
	}
	b, err := json.Marshal(line)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseEMF(t *testing.T) {
	counts, at, ok, err := parseEMF(emfLine(t, nil), "fn", "bookings")
	if err != nil || !ok || at != 1700000000000 || counts[consumer.MetricExecuted] != 2 || counts[consumer.MetricDuplicate] != 3 {
		t.Fatalf("parseEMF = %v, %d, %t, %v", counts, at, ok, err)
	}
	if _, _, ok, err := parseEMF(`{"level":"INFO","msg":"record done"}`, "fn", "bookings"); ok || err != nil {
		t.Errorf("a log line: ok %t, %v; want skipped", ok, err)
	}
	for _, tc := range []struct {
		name, function, want string
		change               func(map[string]any)
	}{
		{name: "another function", function: "other", want: "dimension FunctionName"},
		{name: "a metric missing", function: "fn", want: "metric Held", change: func(l map[string]any) { delete(l, consumer.MetricHeld) }},
		{name: "another namespace", function: "fn", want: "namespace", change: func(l map[string]any) {
			l["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)["Namespace"] = "ExactlyOnce" // the namespace before v0.3.0
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, ok, err := parseEMF(emfLine(t, tc.change), tc.function, "bookings")
			if !ok || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("parseEMF: ok %t, %v; want an error about %s", ok, err, tc.want)
			}
		})
	}
}

// TestDashboardMetrics: a dashboard graphing two consumers lists each
// one's graphs for it, and nothing for a third.
func TestDashboardMetrics(t *testing.T) {
	body := `{"widgets":[{"properties":{"metrics":[
		["sqsidem","Executed","FunctionName","fn","Namespace","bookings"],
		["AWS/Lambda","Errors","FunctionName","fn"],
		["sqsidem","Rerun","FunctionName","fn2","Namespace","notifications"],
		["sqsidem","Mismatch","FunctionName","fn","Namespace","bookings",{"stat":"Sum"}]]}}]}`
	for _, tc := range []struct{ function, namespace, want string }{
		{"fn", "bookings", "Executed,Mismatch"},
		{"fn2", "notifications", "Rerun"},
		{"fn", "notifications", ""},
		{"other", "bookings", ""},
	} {
		names, err := dashboardMetrics(body, tc.function, tc.namespace)
		if err != nil || strings.Join(names, ",") != tc.want {
			t.Errorf("dashboardMetrics(%s, %s) = %v, %v; want %q", tc.function, tc.namespace, names, err, tc.want)
		}
	}
}

// fakeAlarms answers DescribeAlarms from alarms, by name.
type fakeAlarms struct {
	alarms map[string]cwtypes.MetricAlarm
}

func (f fakeAlarms) DescribeAlarms(_ context.Context, in *cloudwatch.DescribeAlarmsInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.DescribeAlarmsOutput, error) {
	out := &cloudwatch.DescribeAlarmsOutput{}
	for _, n := range in.AlarmNames {
		if a, ok := f.alarms[n]; ok {
			out.MetricAlarms = append(out.MetricAlarms, a)
		}
	}
	return out, nil
}

// TestReadersOfTwoConsumers: in a stack with two consumers each reads its
// own dashboard graphs and alarms, the other's are left out; a consumer
// nothing graphs or alarms on fails, saying so.
func TestReadersOfTwoConsumers(t *testing.T) {
	alarm := func(name, metric, fn, ns string) cwtypes.MetricAlarm {
		return cwtypes.MetricAlarm{AlarmName: aws.String(name), Namespace: aws.String(consumer.MetricNamespace), MetricName: aws.String(metric),
			Dimensions: []cwtypes.Dimension{{Name: aws.String(consumer.DimensionFunctionName), Value: aws.String(fn)}, {Name: aws.String(consumer.DimensionNamespace), Value: aws.String(ns)}}}
	}
	cw := fakeAlarms{alarms: map[string]cwtypes.MetricAlarm{
		"a-held":  alarm("a-held", consumer.MetricHeld, "fn-a", "a"),
		"b-rerun": alarm("b-rerun", consumer.MetricRerun, "fn-b", "b"),
		"b-dlq":   {AlarmName: aws.String("b-dlq"), Namespace: aws.String("AWS/SQS"), MetricName: aws.String("ApproximateNumberOfMessagesVisible")},
	}}
	dash := func(fn, ns string) string {
		return `{"widgets":[{"properties":{"metrics":[["sqsidem","Executed","FunctionName","` + fn + `","Namespace","` + ns + `"]]}}]}`
	}
	tpl := fmt.Sprintf(`{"Resources":{
		"DashA":{"Type":"AWS::CloudWatch::Dashboard","Properties":{"DashboardBody":%q}},
		"DashB":{"Type":"AWS::CloudWatch::Dashboard","Properties":{"DashboardBody":%q}},
		"AlarmA":{"Type":"AWS::CloudWatch::Alarm"},"AlarmB":{"Type":"AWS::CloudWatch::Alarm"},"AlarmBDLQ":{"Type":"AWS::CloudWatch::Alarm"}}}`,
		dash("fn-a", "a"), dash("fn-b", "b"))
	physical := map[string]string{"DashA": "dash-a", "DashB": "dash-b", "AlarmA": "a-held", "AlarmB": "b-rerun", "AlarmBDLQ": "b-dlq"}
	for _, tc := range []struct {
		fn, ns, want, err string
	}{
		{fn: "fn-a", ns: "a", want: "map[Executed:[dashboard DashA] Held:[alarm a-held]]"},
		{fn: "fn-b", ns: "b", want: "map[Executed:[dashboard DashB] Rerun:[alarm b-rerun]]"},
		{fn: "fn-c", ns: "c", err: "no dashboard of stack S graphs a sqsidem metric of this consumer (FunctionName fn-c, Namespace c)"},
	} {
		r := &run{cw: cw, st: Stack{Name: "S", Function: tc.fn, Namespace: tc.ns, template: tpl, physical: physical}}
		read, err := r.readers(t.Context())
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want an error saying %q", tc.fn, err, tc.err)
			}
			continue
		}
		if err != nil || fmt.Sprint(read) != tc.want {
			t.Errorf("%s: %v, %v; want %s", tc.fn, read, err, tc.want)
		}
	}
	// Graphed but watched by no alarm: the other consumer's are not its.
	r := &run{cw: cw, st: Stack{Name: "S", Function: "fn-a", Namespace: "a", template: tpl, physical: map[string]string{
		"DashA": "dash-a", "DashB": "dash-b", "AlarmA": "b-rerun", "AlarmB": "b-rerun", "AlarmBDLQ": "b-dlq"}}}
	if _, err := r.readers(t.Context()); err == nil || !strings.Contains(err.Error(), "none of the stack's 3 alarms watches a sqsidem metric of this consumer") {
		t.Errorf("no alarm of its own: %v", err)
	}
}

func TestResolve(t *testing.T) {
	s := Stack{physical: map[string]string{"Fn": "fn-123"}}
	v := map[string]any{"Fn::Join": []any{"", []any{`{"fn":"`, map[string]any{"Ref": "Fn"}, `","region":"`, map[string]any{"Ref": "AWS::Region"}, `"}`}}}
	got, err := s.resolve(v)
	if err != nil || got != `{"fn":"fn-123","region":"us-east-1"}` {
		t.Errorf("resolve = %q, %v", got, err)
	}
	if _, err := s.resolve(map[string]any{"Ref": "Missing"}); err == nil {
		t.Error("a Ref to no resource: no error")
	}
}

func TestParseRerun(t *testing.T) {
	line := `{"time":"2026-12-02T01:04:39Z","level":"WARN","msg":"` + logRerun + `","request_id":"r1","message_id":"m1","outcome":"rerun","attempts":2,"storage_key":"notifications#ab12"}`
	if skey, ok := parseRerun(line); !ok || skey != "notifications#ab12" {
		t.Errorf("parseRerun = %q, %t; want the storage key", skey, ok)
	}
	for _, other := range []string{
		`{"msg":"record done","outcome":"executed","storage_key":"n#1"}`,
		`{"msg":"` + logRerun + `","outcome":"executed","storage_key":"n#1"}`,
		`{"msg":"` + logRerun + `","outcome":"rerun"}`,
		"START RequestId: 1",
	} {
		if skey, ok := parseRerun(other); ok {
			t.Errorf("parseRerun(%s) = %q, want no rerun line", other, skey)
		}
	}
}
