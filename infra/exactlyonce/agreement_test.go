package exactlyonce_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/exactlyonce/sqsidem/infra/exactlyonce"
	"github.com/exactlyonce/sqsidem/infra/exactlyonce/cdktest"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// TestRuntimeAgreement walks the synthesized template of consumers in
// several configurations and fails when the construct and the runtime
// (pkg/idem/consumer) disagree: a variable set on the consumer that the
// runtime does not read (consumer.Variables) and the caller did not give,
// or a metric of the runtime's namespace in an alarm or on the dashboard
// that the runtime never emits (consumer.Metrics), or with other
// dimensions than it writes. Either would be a silent default or an empty
// graph, an alarm that never fires.
func TestRuntimeAgreement(t *testing.T) {
	own := map[string]*string{"PAYMENTS_TABLE": jsii.String("payments")}
	for name, props := range map[string]exactlyonce.ConsumerProps{
		"defaults":    {},
		"key":         {Config: exactlyonce.Config{Key: "paymentId", Mode: consumer.ModeTransactional}},
		"hold":        {Config: exactlyonce.Config{UnknownOutcome: consumer.UnknownHold}},
		"environment": {Config: exactlyonce.Config{Namespace: "charges"}, Environment: own},
		"alarm topic": {Config: exactlyonce.Config{AlarmTopicARN: "arn:aws:sns:eu-west-1:123456789012:alarms"}},
		"provisioned": {Config: exactlyonce.Config{MinPollers: 10, MaxPollers: 100}},
		// Lambda tells the process its concurrency: no variable of ours.
		"managed instances": {
			Config: exactlyonce.Config{ManagedInstances: exactlyonce.ManagedInstances{Concurrency: 8}},
			Instances: &exactlyonce.Instances{CapacityProvider: awslambda.CapacityProvider_FromCapacityProviderArn(
				newStack(), jsii.String("Shared"), jsii.String(sharedProviderARN))},
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, tpl := synthConsumer(t, props)
			runtime := slices.Collect(maps.Keys(props.Environment))
			runtime = append(runtime, consumer.Variables()...)
			for _, v := range slices.Sorted(maps.Keys(cdktest.Env(tpl.One(t, "AWS::Lambda::Function", "OrdersConsumer")))) {
				if !slices.Contains(runtime, v) {
					t.Errorf("the construct sets %s, which the runtime does not read (consumer.Variables)", v)
				}
			}
			metrics := runtimeMetrics(t, tpl)
			if len(metrics) == 0 {
				t.Fatal("no metric of the runtime's namespace in the alarms or on the dashboard")
			}
			for _, m := range metrics {
				if !slices.Contains(consumer.Metrics(), m.name) {
					t.Errorf("%s names metric %q, which the runtime never emits (consumer.Metrics)", m.where, m.name)
				}
				if !slices.Equal(m.dimensions, []string{consumer.DimensionFunctionName, consumer.DimensionNamespace}) {
					t.Errorf("%s reads %s with dimensions %v; the runtime writes %s and %s", m.where, m.name, m.dimensions,
						consumer.DimensionFunctionName, consumer.DimensionNamespace)
				}
			}
		})
	}
}

// metricUse is a metric of consumer.MetricNamespace that the template reads.
type metricUse struct {
	where      string
	name       string
	dimensions []string
}

// runtimeMetrics finds every metric of consumer.MetricNamespace in the
// alarms and in the dashboard's graphs.
func runtimeMetrics(t *testing.T, tpl cdktest.Template) []metricUse {
	t.Helper()
	var uses []metricUse
	for id, a := range tpl.ByType("AWS::CloudWatch::Alarm") {
		if a["Namespace"] != consumer.MetricNamespace {
			continue
		}
		u := metricUse{where: "alarm " + id, name: fmt.Sprint(a["MetricName"])}
		dims, _ := a["Dimensions"].([]any)
		for _, d := range dims {
			u.dimensions = append(u.dimensions, fmt.Sprint(d.(map[string]any)["Name"]))
		}
		uses = append(uses, u)
	}
	for id, d := range tpl.ByType("AWS::CloudWatch::Dashboard") {
		var body struct {
			Widgets []struct {
				Properties struct {
					Title   string  `json:"title"`
					Metrics [][]any `json:"metrics"`
				} `json:"properties"`
			} `json:"widgets"`
		}
		if err := json.Unmarshal([]byte(dashboardBody(t, d["DashboardBody"])), &body); err != nil {
			t.Fatalf("dashboard %s: %v", id, err)
		}
		for _, w := range body.Widgets {
			for _, m := range w.Properties.Metrics {
				if len(m) < 2 || m[0] != consumer.MetricNamespace {
					continue
				}
				u := metricUse{where: fmt.Sprintf("dashboard graph %q", w.Properties.Title), name: fmt.Sprint(m[1])}
				// [namespace, name, dimension, value, dimension, value, ..., {options}]
				for i := 2; i+1 < len(m); i += 2 {
					if name, ok := m[i].(string); ok {
						u.dimensions = append(u.dimensions, name)
					}
				}
				uses = append(uses, u)
			}
		}
	}
	return uses
}
