package exactlyonce

import (
	"fmt"

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

// addAlarms: anything in the DLQ, a backlog older than retries can explain,
// any function error (with ReportBatchItemFailures a failed message is a
// partial batch response, so Errors > 0 means a crash or timeout), and the
// library's outcomes that put exactly-once at risk. With
// Config.AlarmTopicARN set, every alarm notifies that (imported, not
// created) SNS topic.
func (c *Consumer) addAlarms() {
	minute := awscdk.Duration_Minutes(jsii.Number(1))
	opts := func(statistic string) *awscloudwatch.MetricOptions {
		return &awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String(statistic)}
	}
	// Every alarm fires above its threshold in datapoints of periods
	// one-minute periods; missing data (an idle queue) is fine.
	alarm := func(id, description string, metric awscloudwatch.IMetric, threshold float64, datapoints, periods int) {
		c.Alarms = append(c.Alarms, awscloudwatch.NewAlarm(c, jsii.String(id), &awscloudwatch.AlarmProps{
			AlarmDescription:   jsii.String(description),
			Metric:             metric,
			Threshold:          jsii.Number(threshold),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
			EvaluationPeriods:  jsii.Number(periods),
			DatapointsToAlarm:  datapointsToAlarm(datapoints, periods),
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		}))
	}
	cfg := c.Config
	alarm("AlarmDeadLetterQueueNotEmpty", "Messages failed MaxReceiveCount times and were dead-lettered.",
		c.DeadLetterQueue.MetricApproximateNumberOfMessagesVisible(opts("Maximum")), 0, 1, 1)
	alarm("AlarmQueueBacklogAge",
		fmt.Sprintf("Oldest message is older than (MaxReceiveCount+1) x visibility timeout = %s: the consumer is not keeping up.", cfg.BacklogAgeThreshold()),
		c.Queue.MetricApproximateAgeOfOldestMessage(opts("Maximum")), cfg.BacklogAgeThreshold().Seconds(), 1, 1)
	alarm("AlarmConsumerErrors", "The consumer function crashed or timed out.",
		c.Function.MetricErrors(opts("Sum")), 0, 1, 1)
	alarm("AlarmLeaseLost", "An effect outlived its lease and another attempt took the key over (LeaseLost): the effect may have run twice. Raise FunctionTimeout or make the effect faster.",
		c.OutcomeMetric(consumer.MetricLeaseLost), 0, 1, 1)
	alarm("AlarmUnconfirmed", "An effect ran but its receipt could not be written before the lease ended (Unconfirmed): the next delivery may run it again.",
		c.OutcomeMetric(consumer.MetricUnconfirmed), 0, 1, 1)
	alarm("AlarmStoreErrors",
		fmt.Sprintf("The receipt store failed in %d of %d minutes (StoreError): messages are retried and move towards the DLQ without their effect running.", storeErrorDatapoints, storeErrorPeriods),
		c.OutcomeMetric(consumer.MetricStoreError), 0, storeErrorDatapoints, storeErrorPeriods)

	if cfg.AlarmTopicARN == "" {
		return
	}
	topic := awssns.Topic_FromTopicArn(c, jsii.String("AlarmTopic"), jsii.String(cfg.AlarmTopicARN))
	action := awscloudwatchactions.NewSnsAction(topic)
	for _, a := range c.Alarms {
		a.AddAlarmAction(action)
	}
}

// datapointsToAlarm is left unset for "N of N", CloudWatch's default, which
// keeps the template of the first three alarms as it was.
func datapointsToAlarm(datapoints, periods int) *float64 {
	if datapoints == periods {
		return nil
	}
	return jsii.Number(datapoints)
}
