package exactlyonce

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/jsii-runtime-go"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// Store errors alarm when they occur in storeErrorDatapoints of
// storeErrorPeriods consecutive minutes. A single store error costs only a
// redelivery (the record goes back to the queue after the SDK's own retries),
// so one bad minute is noise. Errors minute after minute mean the store is
// unhealthy for this consumer (throttled, unreachable, a permission or KMS
// key problem after a deploy), and every redelivery raises the message's
// receive count: left alone, messages reach the DLQ without their effect
// ever having run. Five minutes is well inside MaxReceiveCount x visibility
// timeout of the default profile (15 minutes).
const (
	storeErrorDatapoints = 3
	storeErrorPeriods    = 5
)

// OutcomeMetric is one of the consumer's outcome counts (consumer.Metric*),
// as the consumer emits them in Embedded Metric Format: namespace
// consumer.MetricNamespace, dimensions FunctionName and Namespace, summed
// per minute.
func (c *Consumer) OutcomeMetric(name string) awscloudwatch.Metric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace:  jsii.String(consumer.MetricNamespace),
		MetricName: jsii.String(name),
		DimensionsMap: &map[string]*string{
			consumer.DimensionFunctionName: c.Function.FunctionName(),
			consumer.DimensionNamespace:    jsii.String(c.Config.Namespace),
		},
		Statistic: jsii.String("Sum"),
		Period:    awscdk.Duration_Minutes(jsii.Number(1)),
	})
}

// maxAlarmDescription is CloudWatch's limit on an AlarmDescription.
const maxAlarmDescription = 1024

// RunbookSection is the address of an alarm's section of the runbook:
// RunbookURL#<alarm id in lower case>, GitHub's anchor of the heading
// "## <alarm id>". Every alarm's description ends with it.
func (c Config) RunbookSection(alarmID string) string {
	return c.RunbookURL + "#" + strings.ToLower(alarmID)
}

// addAlarms: anything in the DLQ, a backlog older than retries can explain,
// any function error (with ReportBatchItemFailures a failed message is a
// partial batch response, so Errors > 0 means a crash or timeout), the
// library's outcomes that put exactly-once at risk, any key held for an
// operator (Config.UnknownOutcome), and re-runs of unknown outcomes above
// Config.AlarmRerunThreshold a minute. With
// Config.AlarmTopicARN set, every alarm notifies that (imported, not
// created) SNS topic.
//
// Each description says first what to run (idemctl, pointed at this
// consumer), then what happened, and ends with the alarm's runbook
// section (Config.RunbookSection).
func (c *Consumer) addAlarms(id string) {
	minute := awscdk.Duration_Minutes(jsii.Number(1))
	opts := func(statistic string) *awscloudwatch.MetricOptions {
		return &awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String(statistic)}
	}
	cfg := c.Config
	target := c.idemctlTarget(id)
	var tooLong []string
	// Every alarm fires above its threshold in datapoints of periods
	// one-minute periods; missing data (an idle queue) is fine.
	alarm := func(alarmID, run, what string, metric awscloudwatch.IMetric, threshold float64, datapoints, periods int) {
		description := fmt.Sprintf("Run: idemctl %s. %s Runbook: %s", fmt.Sprintf(run, target), what, cfg.RunbookSection(alarmID))
		if n := len(description); n > maxAlarmDescription {
			tooLong = append(tooLong, fmt.Sprintf("%s (%d)", alarmID, n))
		}
		c.Alarms = append(c.Alarms, awscloudwatch.NewAlarm(c, jsii.String(alarmID), &awscloudwatch.AlarmProps{
			AlarmDescription:   jsii.String(description),
			Metric:             metric,
			Threshold:          jsii.Number(threshold),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
			EvaluationPeriods:  jsii.Number(periods),
			DatapointsToAlarm:  datapointsToAlarm(datapoints, periods),
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		}))
	}
	alarm("AlarmDeadLetterQueueNotEmpty", "redrive --dry-run %s",
		"Messages failed MaxReceiveCount times and were dead-lettered.",
		c.DeadLetterQueue.MetricApproximateNumberOfMessagesVisible(opts("Maximum")), 0, 1, 1)
	alarm("AlarmQueueBacklogAge", "stats %s",
		fmt.Sprintf("Oldest message is older than (MaxReceiveCount+1) x visibility timeout = %s: the consumer is not keeping up.", cfg.BacklogAgeThreshold()),
		c.Queue.MetricApproximateAgeOfOldestMessage(opts("Maximum")), cfg.BacklogAgeThreshold().Seconds(), 1, 1)
	alarm("AlarmConsumerErrors", "list --status unconfirmed %s",
		"The consumer function crashed or timed out.",
		c.Function.MetricErrors(opts("Sum")), 0, 1, 1)
	alarm("AlarmLeaseLost", "inspect --storage-key <storage_key> %s, for each storage_key logged with outcome=lease_lost",
		"An effect outlived its lease and another attempt took the key over (LeaseLost): the effect may have run twice. Raise FunctionTimeout or make the effect faster.",
		c.OutcomeMetric(consumer.MetricLeaseLost), 0, 1, 1)
	alarm("AlarmUnconfirmed", "list --status unconfirmed %s",
		"An effect ran but its receipt could not be written before the invocation's deadline (Unconfirmed): a later copy of the key in another instance, or after retention, may run it again.",
		c.OutcomeMetric(consumer.MetricUnconfirmed), 0, 1, 1)
	alarm("AlarmStoreErrors", "stats %s",
		fmt.Sprintf("The receipt store failed in %d of %d minutes (StoreError): messages are retried and move towards the DLQ without their effect running.", storeErrorDatapoints, storeErrorPeriods),
		c.OutcomeMetric(consumer.MetricStoreError), 0, storeErrorDatapoints, storeErrorPeriods)
	// Created whatever UnknownOutcome says: a key held under hold stays
	// held (no expiry) after a switch to retry, and its copies go on
	// failing into the DLQ.
	alarm("AlarmHeld", "list --status held %s, then idemctl resolve KEY --done or --not-done",
		"An effect's outcome was unknown and its Reconcile could not tell (Held): the key is parked and its messages go to the DLQ until someone checks downstream and resolves it.",
		c.OutcomeMetric(consumer.MetricHeld), 0, 1, 1)
	// Created whatever the mode and policy: only retry re-runs an effect,
	// so under hold or in transactional mode a Rerun is a broken promise
	// and the first fires (Validate keeps the threshold 0 there).
	rerun := "An unknown outcome nobody settled was run again (Rerun, policy retry): the effect may have run twice for that key."
	if n := cfg.AlarmRerunThreshold; n > 0 {
		rerun = fmt.Sprintf("More than %d re-runs a minute (AlarmRerunThreshold). %s", n, rerun)
	}
	alarm("AlarmRerun", "inspect --storage-key <storage_key> %s, for each storage_key logged with outcome=rerun", rerun,
		c.OutcomeMetric(consumer.MetricRerun), float64(cfg.AlarmRerunThreshold), 1, 1)
	if len(tooLong) > 0 {
		panic(fmt.Sprintf("exactlyonce: consumer %q: alarm descriptions longer than CloudWatch's %d characters: %s; shorten Config.RunbookURL or the construct id",
			id, maxAlarmDescription, strings.Join(tooLong, ", ")))
	}

	if cfg.AlarmTopicARN == "" {
		return
	}
	topic := awssns.Topic_FromTopicArn(c, jsii.String("AlarmTopic"), jsii.String(cfg.AlarmTopicARN))
	action := awscloudwatchactions.NewSnsAction(topic)
	for _, a := range c.Alarms {
		a.AddAlarmAction(action)
	}
}

// idemctlTarget is the flags that point idemctl at this consumer: the
// stack's name ($STACK when it is known only at deploy time, as in a nested
// stack) and, unless it is the stack's unprefixed consumer (addOutputs),
// its construct id.
func (c *Consumer) idemctlTarget(id string) string {
	stack := *awscdk.Stack_Of(c).StackName()
	if isToken(stack) {
		stack = "$STACK"
	}
	target := "--stack " + stack
	if id != unprefixedID {
		target += " --consumer " + id
	}
	return target
}

// datapointsToAlarm is left unset for "N of N", CloudWatch's default, which
// keeps the template of the first three alarms as it was.
func datapointsToAlarm(datapoints, periods int) *float64 {
	if datapoints == periods {
		return nil
	}
	return jsii.Number(datapoints)
}
