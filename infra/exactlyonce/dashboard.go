package exactlyonce

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawscloudwatch"
	"github.com/aws/jsii-runtime-go"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// The dashboard is a 24-column grid; widgets are 6 rows high.
const (
	gridWidth    = 24
	widgetHeight = 6
)

// addDashboard: the alarms' state first, then what the library did with the
// records (the normal outcomes, the ones that need a look, and what became
// of unknown outcomes), the queues, and the consumer function. Add rows
// with c.Dashboard.AddWidgets, e.g. FunctionWidgets of a producer.
func (c *Consumer) addDashboard() {
	c.Dashboard = awscloudwatch.NewDashboard(c, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DefaultInterval: awscdk.Duration_Hours(jsii.Number(3)),
	})
	c.Dashboard.AddWidgets(awscloudwatch.NewAlarmStatusWidget(&awscloudwatch.AlarmStatusWidgetProps{
		Title:  jsii.String("Alarms"),
		Alarms: alarmsOf(c.Alarms),
		Width:  jsii.Number(gridWidth),
		Height: jsii.Number(3),
	}))

	outcomes := func(names ...string) *[]awscloudwatch.IMetric {
		var ms []awscloudwatch.IMetric
		for _, n := range names {
			ms = append(ms, c.OutcomeMetric(n))
		}
		return &ms
	}
	// What became of the unknown outcomes, side by side: settled by
	// asking (Reconciled), run again (Rerun: what retry costs, with
	// AlarmRerun's threshold when it lets some pass), parked (Held).
	var rerunLine *[]*awscloudwatch.HorizontalAnnotation
	if n := c.Config.AlarmRerunThreshold; n > 0 {
		rerunLine = &[]*awscloudwatch.HorizontalAnnotation{{Value: jsii.Number(n), Label: jsii.String("rerun alarm")}}
	}
	c.Dashboard.AddWidgets(
		graph("Records: outcomes (count per minute)", gridWidth/3, outcomes(
			consumer.MetricExecuted, consumer.MetricDuplicate, consumer.MetricInProgress, consumer.MetricSkipped), nil),
		graph("Records: need a look (count per minute)", gridWidth/3, outcomes(
			consumer.MetricFailed, consumer.MetricStoreError, consumer.MetricLeaseLost,
			consumer.MetricUnconfirmed, consumer.MetricMismatch, consumer.MetricRejected), nil),
		graph("Records: unknown outcomes (count per minute)", gridWidth/3, outcomes(
			consumer.MetricReconciled, consumer.MetricRerun, consumer.MetricHeld), rerunLine),
	)

	maximum := &awscloudwatch.MetricOptions{Statistic: jsii.String("Maximum"), Period: awscdk.Duration_Minutes(jsii.Number(1))}
	c.Dashboard.AddWidgets(
		graph("Queue: messages waiting", gridWidth/3, &[]awscloudwatch.IMetric{
			c.Queue.MetricApproximateNumberOfMessagesVisible(maximum),
			c.Queue.MetricApproximateNumberOfMessagesNotVisible(maximum),
		}, nil),
		graph("Queue: age of the oldest message (s)", gridWidth/3, &[]awscloudwatch.IMetric{
			c.Queue.MetricApproximateAgeOfOldestMessage(maximum),
		}, &[]*awscloudwatch.HorizontalAnnotation{{
			Value: jsii.Number(c.Config.BacklogAgeThreshold().Seconds()),
			Label: jsii.String("backlog alarm"),
		}}),
		graph("Dead-letter queue: messages", gridWidth/3, &[]awscloudwatch.IMetric{
			c.DeadLetterQueue.MetricApproximateNumberOfMessagesVisible(maximum),
		}, nil),
	)
	c.Dashboard.AddWidgets(FunctionWidgets(c.Function, "Consumer")...)
}

// FunctionWidgets is a dashboard row for a function: errors and throttles,
// duration, and concurrency.
func FunctionWidgets(fn awslambda.IFunction, title string) []awscloudwatch.IWidget {
	minute := awscdk.Duration_Minutes(jsii.Number(1))
	stat := func(s string) *awscloudwatch.MetricOptions {
		return &awscloudwatch.MetricOptions{Statistic: jsii.String(s), Period: minute}
	}
	duration := func(s string) awscloudwatch.IMetric {
		o := stat(s)
		o.Label = jsii.String(s)
		return fn.MetricDuration(o)
	}
	return []awscloudwatch.IWidget{
		graph(title+": errors and throttles", gridWidth/3, &[]awscloudwatch.IMetric{
			fn.MetricErrors(stat("Sum")), fn.MetricThrottles(stat("Sum")), fn.MetricInvocations(stat("Sum")),
		}, nil),
		graph(title+": duration (ms)", gridWidth/3, &[]awscloudwatch.IMetric{
			duration("p50"), duration("p99"), duration("Maximum"),
		}, nil),
		graph(title+": concurrent executions", gridWidth/3, &[]awscloudwatch.IMetric{
			fn.Metric(jsii.String("ConcurrentExecutions"), stat("Maximum")),
		}, nil),
	}
}

func graph(title string, width int, left *[]awscloudwatch.IMetric, annotations *[]*awscloudwatch.HorizontalAnnotation) awscloudwatch.IWidget {
	return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
		Title:           jsii.String(title),
		Width:           jsii.Number(width),
		Height:          jsii.Number(widgetHeight),
		Left:            left,
		LeftAnnotations: annotations,
		LeftYAxis:       &awscloudwatch.YAxisProps{Min: jsii.Number(0)},
		LegendPosition:  awscloudwatch.LegendPosition_BOTTOM,
	})
}

func alarmsOf(alarms []awscloudwatch.Alarm) *[]interfacesawscloudwatch.IAlarmRef {
	out := make([]interfacesawscloudwatch.IAlarmRef, len(alarms))
	for i, a := range alarms {
		out[i] = a
	}
	return &out
}
