package exactlyonce_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/jsii-runtime-go"

	"github.com/exactlyonce/sqsidem/infra/exactlyonce"
	"github.com/exactlyonce/sqsidem/infra/exactlyonce/cdktest"
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
	if len(c.Alarms) != 8 {
		t.Errorf("Consumer.Alarms has %d, want 8", len(c.Alarms))
	}
	dims := emfDimensions(tpl, t, "gift-cards")
	cdktest.Check(t, "alarms", func() {
		tpl.ResourceCountIs(jsii.String("AWS::CloudWatch::Alarm"), jsii.Number(8))
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
		// may run again. Any Held: a key waits for an operator. Any
		// Rerun, by default: the effect may have run twice.
		for _, m := range []string{consumer.MetricLeaseLost, consumer.MetricUnconfirmed, consumer.MetricHeld, consumer.MetricRerun} {
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
	if len(alarms) != 8 {
		t.Fatalf("want 8 alarms, got %d", len(alarms))
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

// alarmDescriptions: the AlarmDescription of each of c's alarms, by alarm
// id.
func alarmDescriptions(t *testing.T, c *exactlyonce.Consumer, tpl cdktest.Template) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, a := range c.Alarms {
		id := *a.Node().Id()
		logical := *awscdk.Stack_Of(a).GetLogicalId(a.Node().DefaultChild().(awscdk.CfnElement))
		props, ok := tpl.ByType("AWS::CloudWatch::Alarm")[logical]
		if !ok {
			t.Fatalf("alarm %s (%s) is not in the template", id, logical)
		}
		d, ok := props["AlarmDescription"].(string)
		if !ok {
			t.Fatalf("alarm %s: AlarmDescription %v is not a string", id, props["AlarmDescription"])
		}
		out[id] = d
	}
	return out
}

// TestAlarmDescriptions: every description starts with the idemctl command
// for this stack and consumer and ends with the alarm's runbook section,
// the default runbook or the team's own.
func TestAlarmDescriptions(t *testing.T) {
	const own = "https://wiki.example.com/ops/orders-runbook"
	for name, tt := range map[string]struct {
		id, runbook, target string
	}{
		"default runbook":      {"Orders", "", "--stack Test --consumer Orders"},
		"own runbook":          {"Orders", own, "--stack Test --consumer Orders"},
		"unprefixed consumer":  {"Default", "", "--stack Test"},
		"own runbook, Default": {"Default", own, "--stack Test"},
	} {
		t.Run(name, func(t *testing.T) {
			stack := newStack()
			c := exactlyonce.NewConsumer(stack, tt.id, &exactlyonce.ConsumerProps{Code: cdktest.Code(), Config: exactlyonce.Config{RunbookURL: tt.runbook}})
			descriptions := alarmDescriptions(t, c, cdktest.Synth(t, stack))
			if len(descriptions) != 8 {
				t.Fatalf("%d alarms, want 8", len(descriptions))
			}
			base := tt.runbook
			if base == "" {
				base = exactlyonce.DefaultRunbookURL
			}
			for id, d := range descriptions {
				section := base + "#" + strings.ToLower(id)
				if got := c.Config.RunbookSection(id); got != section {
					t.Errorf("RunbookSection(%s) = %q, want %q", id, got, section)
				}
				if !strings.HasSuffix(d, " Runbook: "+section) {
					t.Errorf("alarm %s: description %q does not end with the runbook section %s", id, d, section)
				}
				if !strings.HasPrefix(d, "Run: idemctl ") || !strings.Contains(d, " "+tt.target+". ") && !strings.Contains(d, " "+tt.target+", ") {
					t.Errorf("alarm %s: description %q does not start with the idemctl command for %q", id, d, tt.target)
				}
				if tt.id == "Default" && strings.Contains(d, "--consumer") {
					t.Errorf("alarm %s: the unprefixed consumer needs no --consumer: %q", id, d)
				}
			}
			if tt.id == "Orders" && tt.runbook == "" {
				want := "Run: idemctl redrive --dry-run --stack Test --consumer Orders. Messages failed MaxReceiveCount times and were dead-lettered. " +
					"Runbook: https://github.com/exactlyonce/sqsidem/blob/main/cmd/idemctl/RUNBOOK.md#alarmdeadletterqueuenotempty"
				if got := descriptions["AlarmDeadLetterQueueNotEmpty"]; got != want {
					t.Errorf("DLQ alarm description\n got %q\nwant %q", got, want)
				}
				held := "Run: idemctl list --status held --stack Test --consumer Orders, then idemctl resolve KEY --done or --not-done. "
				if got := descriptions["AlarmHeld"]; !strings.HasPrefix(got, held) || !strings.HasSuffix(got, "RUNBOOK.md#alarmheld") {
					t.Errorf("held alarm description %q, want it to start with %q and link to #alarmheld", got, held)
				}
				rerun := "Run: idemctl inspect --storage-key <storage_key> --stack Test --consumer Orders, for each storage_key logged with outcome=rerun. "
				if got := descriptions["AlarmRerun"]; !strings.HasPrefix(got, rerun) || !strings.HasSuffix(got, "RUNBOOK.md#alarmrerun") {
					t.Errorf("rerun alarm description %q, want it to start with %q and link to #alarmrerun", got, rerun)
				}
			}
		})
	}
}

// TestAlarmDescriptionLength: CloudWatch refuses an AlarmDescription over
// 1024 characters. The longest RunbookURL Validate accepts, with the
// largest AlarmRerunThreshold, in a stack with CloudFormation's longest
// name, still fits; a construct id that does not is refused at synth time
// rather than at deploy.
func TestAlarmDescriptionLength(t *testing.T) {
	longest := "https://runbooks.example.com/" + strings.Repeat("r", 512-len("https://runbooks.example.com/"))
	cfg := exactlyonce.Config{RunbookURL: longest, AlarmRerunThreshold: math.MaxInt}
	if err := cfg.WithDefaults().Validate(); err != nil {
		t.Fatalf("the longest RunbookURL must validate: %v", err)
	}
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"+strings.Repeat("x", 127)), nil)
	c := exactlyonce.NewConsumer(stack, "OrdersConsumerForTheEuropeanWarehouse", &exactlyonce.ConsumerProps{Code: cdktest.Code(), Config: cfg})
	for id, d := range alarmDescriptions(t, c, cdktest.Synth(t, stack)) {
		if len(d) > 1024 {
			t.Errorf("alarm %s: description has %d characters, CloudWatch allows 1024: %q", id, len(d), d)
		}
	}

	msg := cdktest.Panics(func() {
		exactlyonce.NewConsumer(newStack(), strings.Repeat("Orders", 60), &exactlyonce.ConsumerProps{Code: cdktest.Code(), Config: cfg})
	})
	if !strings.Contains(msg, "alarm descriptions longer than CloudWatch's 1024 characters") || !strings.Contains(msg, "AlarmLeaseLost") {
		t.Errorf("panic = %q, want the alarms whose description is too long", msg)
	}
}

// TestAlarmHeld: AlarmHeld watches the Held outcome whatever the policy
// and the mode: a key held under hold stays held after a switch to retry
// (or from a lease-mode deployment to transactional), and its copies go
// on failing.
func TestAlarmHeld(t *testing.T) {
	for name, cfg := range map[string]exactlyonce.Config{
		"retry":         {},
		"hold":          {UnknownOutcome: consumer.UnknownHold},
		"transactional": {Mode: consumer.ModeTransactional},
	} {
		t.Run(name, func(t *testing.T) {
			c, tpl := synthConsumer(t, exactlyonce.ConsumerProps{Config: cfg})
			descriptions := alarmDescriptions(t, c, tpl)
			if _, ok := descriptions["AlarmHeld"]; !ok {
				t.Fatalf("no AlarmHeld among %d alarms", len(descriptions))
			}
			cdktest.Check(t, "held alarm", func() {
				tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
					"Namespace": consumer.MetricNamespace, "MetricName": consumer.MetricHeld,
					"Dimensions": emfDimensions(tpl, t, consumer.DefaultNamespace),
					"Statistic":  "Sum", "Threshold": 0, "EvaluationPeriods": 1, "ComparisonOperator": "GreaterThanThreshold",
					"AlarmDescription": assertions.Match_StringLikeRegexp(jsii.String(`RUNBOOK\.md#alarmheld$`)),
				})
			})
		})
	}
}

// TestAlarmRerun: AlarmRerun watches the Rerun outcome (an unknown outcome
// run again under retry: the effect may have run twice) in every mode and
// policy, above Config.AlarmRerunThreshold a minute: by default the first
// fires; a team that accepts some says how many, and the description and
// the dashboard show that number.
func TestAlarmRerun(t *testing.T) {
	for name, tt := range map[string]struct {
		cfg       exactlyonce.Config
		threshold int
	}{
		"retry":             {cfg: exactlyonce.Config{}},
		"retry, 5 a minute": {cfg: exactlyonce.Config{AlarmRerunThreshold: 5}, threshold: 5},
		"hold":              {cfg: exactlyonce.Config{UnknownOutcome: consumer.UnknownHold}},
		"transactional":     {cfg: exactlyonce.Config{Mode: consumer.ModeTransactional}},
		"lease, 1 a minute": {cfg: exactlyonce.Config{Mode: consumer.ModeLease, UnknownOutcome: consumer.UnknownRetry, AlarmRerunThreshold: 1}, threshold: 1},
	} {
		t.Run(name, func(t *testing.T) {
			c, tpl := synthConsumer(t, exactlyonce.ConsumerProps{Config: tt.cfg})
			description, ok := alarmDescriptions(t, c, tpl)["AlarmRerun"]
			if !ok {
				t.Fatalf("no AlarmRerun among the consumer's alarms")
			}
			cdktest.Check(t, "rerun alarm", func() {
				tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
					"Namespace": consumer.MetricNamespace, "MetricName": consumer.MetricRerun,
					"Dimensions": emfDimensions(tpl, t, consumer.DefaultNamespace),
					"Statistic":  "Sum", "Period": 60, "Threshold": tt.threshold, "EvaluationPeriods": 1,
					"ComparisonOperator": "GreaterThanThreshold", "TreatMissingData": "notBreaching",
					"AlarmDescription": assertions.Match_StringLikeRegexp(jsii.String(`RUNBOOK\.md#alarmrerun$`)),
				})
			})
			more := fmt.Sprintf("More than %d re-runs a minute (AlarmRerunThreshold).", tt.threshold)
			switch {
			case tt.threshold > 0 && !strings.Contains(description, more):
				t.Errorf("description %q does not say %q", description, more)
			case tt.threshold == 0 && strings.Contains(description, "More than"):
				t.Errorf("description %q names a threshold, but the first re-run fires", description)
			}
			var body string
			for _, d := range tpl.ByType("AWS::CloudWatch::Dashboard") {
				body = dashboardBody(t, d["DashboardBody"])
			}
			line := fmt.Sprintf(`{"label":"rerun alarm","value":%d,"yAxis":"left"}`, tt.threshold)
			if got := strings.Contains(body, line); got != (tt.threshold > 0) {
				t.Errorf("dashboard shows the threshold %s: %v, want %v", line, got, tt.threshold > 0)
			}
		})
	}
}
