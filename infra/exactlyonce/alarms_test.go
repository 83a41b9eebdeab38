package exactlyonce_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/jsii-runtime-go"

	"github.com/exactlyonce/sqsidem/infra/exactlyonce"
	"github.com/exactlyonce/sqsidem/infra/internal/cdktest"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// emfDimensions are those the consumer writes: its function name (a Ref to
// the function) and its namespace.
func emfDimensions(tpl cdktest.Template, t *testing.T, namespace string) []any {
	fnID := ""
	for id := range tpl.ByType("AWS::Lambda::Function") {
		if strings.HasPrefix(id, "OrdersConsumer") {
			fnID = id
		}
	}
	if fnID == "" {
		t.Fatal("no consumer function")
	}
	return []any{
		map[string]any{"Name": consumer.DimensionFunctionName, "Value": map[string]any{"Ref": fnID}},
		map[string]any{"Name": consumer.DimensionNamespace, "Value": namespace},
	}
}

func TestAlarms(t *testing.T) {
	c, tpl := synthConsumer(t, exactlyonce.ConsumerProps{Config: exactlyonce.Config{Namespace: "gift-cards"}})
	if len(c.Alarms) != 6 {
		t.Errorf("Consumer.Alarms has %d, want 6", len(c.Alarms))
	}
	dims := emfDimensions(tpl, t, "gift-cards")
	cdktest.Check(t, "alarms", func() {
		tpl.ResourceCountIs(jsii.String("AWS::CloudWatch::Alarm"), jsii.Number(6))
		every := map[string]any{
			"ComparisonOperator": "GreaterThanThreshold", "Period": 60, "TreatMissingData": "notBreaching",
		}
		tpl.AllResourcesProperties(jsii.String("AWS::CloudWatch::Alarm"), every)
		for _, m := range []string{"ApproximateNumberOfMessagesVisible", "Errors"} {
			tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{"MetricName": m, "Threshold": 0, "EvaluationPeriods": 1})
		}
		tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
			"MetricName": "ApproximateAgeOfOldestMessage",
			"Threshold":  c.Config.BacklogAgeThreshold().Seconds(),
		})
		// Any LeaseLost or Unconfirmed: the effect may have run twice or
		// may run again.
		for _, m := range []string{consumer.MetricLeaseLost, consumer.MetricUnconfirmed} {
			tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
				"Namespace": consumer.MetricNamespace, "MetricName": m, "Dimensions": dims,
				"Statistic": "Sum", "Threshold": 0, "EvaluationPeriods": 1,
			})
		}
		// Store errors: sustained, 3 of 5 minutes.
		tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
			"Namespace": consumer.MetricNamespace, "MetricName": consumer.MetricStoreError, "Dimensions": dims,
			"Statistic": "Sum", "Threshold": 0, "EvaluationPeriods": 5, "DatapointsToAlarm": 3,
		})
	})
	for id, a := range tpl.ByType("AWS::CloudWatch::Alarm") {
		if _, ok := a["AlarmActions"]; ok {
			t.Errorf("alarm %s has AlarmActions without AlarmTopicARN: %v", id, a["AlarmActions"])
		}
	}
}

// TestAlarmTopic: with AlarmTopicARN every alarm notifies exactly that
// topic; the topic is imported, so no SNS resource is created. A token (a
// topic of the same app) is accepted as is.
func TestAlarmTopic(t *testing.T) {
	arn := "arn:aws:sns:eu-west-1:123456789012:alarms"
	_, tpl := synthConsumer(t, exactlyonce.ConsumerProps{Config: exactlyonce.Config{AlarmTopicARN: arn}})
	alarms := tpl.ByType("AWS::CloudWatch::Alarm")
	if len(alarms) != 6 {
		t.Fatalf("want 6 alarms, got %d", len(alarms))
	}
	for id, a := range alarms {
		if got := cdktest.Strings(a["AlarmActions"]); len(got) != 1 || got[0] != arn {
			t.Errorf("alarm %s: AlarmActions = %v, want [%s]", id, a["AlarmActions"], arn)
		}
	}
	for id, r := range tpl.Resources {
		if strings.HasPrefix(r.Type, "AWS::SNS::") {
			t.Errorf("unexpected SNS resource %s (%s): the topic must be imported", id, r.Type)
		}
	}

	stack := newStack()
	topic := awssns.NewTopic(stack, jsii.String("Alarms"), nil)
	exactlyonce.NewConsumer(stack, "Orders", &exactlyonce.ConsumerProps{Code: cdktest.Code(), Config: exactlyonce.Config{AlarmTopicARN: *topic.TopicArn()}})
	cdktest.Check(t, "topic of the same app", func() {
		cdktest.Synth(t, stack).AllResourcesProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
			"AlarmActions": []any{map[string]any{"Ref": *awscdk.Stack_Of(topic).GetLogicalId(topic.Node().DefaultChild().(awscdk.CfnElement))}},
		})
	})
}
