package kit

import (
	"encoding/json"
	"strings"
	"testing"

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

func TestDashboardMetrics(t *testing.T) {
	body := `{"widgets":[{"properties":{"metrics":[
		["sqsidem","Executed","FunctionName","fn","Namespace","bookings"],
		["AWS/Lambda","Errors","FunctionName","fn"],
		["sqsidem","Mismatch","FunctionName","fn","Namespace","bookings",{"stat":"Sum"}]]}}]}`
	names, err := dashboardMetrics(body, "fn", "bookings")
	if err != nil || strings.Join(names, ",") != "Executed,Mismatch" {
		t.Errorf("dashboardMetrics = %v, %v; want Executed and Mismatch", names, err)
	}
	if _, err := dashboardMetrics(body, "other", "bookings"); err == nil {
		t.Error("another consumer's graphs: no error")
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
