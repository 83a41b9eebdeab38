package exactlyonce_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/exactlyonce/sqsidem/infra/exactlyonce"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// TestDashboard: the dashboard graphs every outcome the consumer emits,
// with the dimensions it emits them with, and the queue and function
// health, and shows every alarm.
func TestDashboard(t *testing.T) {
	_, tpl := synthConsumer(t, exactlyonce.ConsumerProps{Config: exactlyonce.Config{Namespace: "gift-cards"}})
	dashboards := tpl.ByType("AWS::CloudWatch::Dashboard")
	if len(dashboards) != 1 {
		t.Fatalf("want one dashboard, got %d", len(dashboards))
	}
	var body string
	for _, d := range dashboards {
		body = dashboardBody(t, d["DashboardBody"])
	}
	var fnID string
	for id := range tpl.ByType("AWS::Lambda::Function") {
		fnID = id
	}
	fn := "{Ref:" + fnID + "}"
	for _, m := range consumer.Metrics() {
		want := fmt.Sprintf(`[%q,%q,%q,%q,%q,"gift-cards"`, consumer.MetricNamespace, m, consumer.DimensionFunctionName, fn, consumer.DimensionNamespace)
		if !strings.Contains(body, want) {
			t.Errorf("dashboard lacks outcome %s: %s", m, want)
		}
	}
	for _, want := range []string{
		`"AWS/SQS","ApproximateNumberOfMessagesVisible","QueueName","{GetAtt:OrdersDeadLetterQueue`,
		`"AWS/SQS","ApproximateAgeOfOldestMessage","QueueName","{GetAtt:OrdersQueue`,
		`"AWS/Lambda","Errors","FunctionName","` + fn,
		`"AWS/Lambda","Throttles","FunctionName","` + fn,
		`"AWS/Lambda","Duration","FunctionName","` + fn,
		`"AWS/Lambda","ConcurrentExecutions","FunctionName","` + fn,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("dashboard lacks %s", want)
		}
	}
	var alarmIDs []string
	for id := range tpl.ByType("AWS::CloudWatch::Alarm") {
		alarmIDs = append(alarmIDs, id)
	}
	for _, id := range alarmIDs {
		if !strings.Contains(body, "{GetAtt:"+id+".Arn}") {
			t.Errorf("alarm status widget lacks %s", id)
		}
	}
}

// dashboardBody renders the body's Fn::Join with references written as
// {Ref:id} and {GetAtt:id.attr}, so the test can look for plain strings.
func dashboardBody(t *testing.T, v any) string {
	t.Helper()
	join, ok := v.(map[string]any)["Fn::Join"].([]any)
	if !ok {
		s, _ := v.(string)
		return s
	}
	var b strings.Builder
	for _, part := range join[1].([]any) {
		switch p := part.(type) {
		case string:
			b.WriteString(p)
		case map[string]any:
			if ref, ok := p["Ref"]; ok {
				fmt.Fprintf(&b, "{Ref:%v}", ref)
			} else if ga, ok := p["Fn::GetAtt"].([]any); ok {
				fmt.Fprintf(&b, "{GetAtt:%v.%v}", ga[0], ga[1])
			} else {
				raw, _ := json.Marshal(p)
				b.Write(raw)
			}
		}
	}
	return b.String()
}
