package exactlyonce

import (
	"fmt"

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
// of unknown outcomes), the queues, the consumer function, and in
// provisioned mode the mapping's pollers. Add rows with
// c.Dashboard.AddWidgets, e.g. FunctionWidgets of a producer.
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
	if c.Config.Provisioned() {
		c.Dashboard.AddWidgets(c.pollerWidgets()...)
	}
}

// pollerWidgets is the row an operator sizes provisioned pollers by, beside
// the queue's depth and age and the function's concurrency above: the
// pollers running (ProvisionedPollers) against MinPollers and MaxPollers
// and against the pollers the function's concurrency needs (up to 10
// batches at once each), and what the mapping did with the messages (its
// EventCount metrics). Each is an AWS/Lambda metric of the mapping
// (dimension EventSourceMappingUUID).
func (c *Consumer) pollerWidgets() []awscloudwatch.IWidget {
	minute := awscdk.Duration_Minutes(jsii.Number(1))
	mapping := func(name, statistic, label string) awscloudwatch.IMetric {
		return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace:     jsii.String("AWS/Lambda"),
			MetricName:    jsii.String(name),
			DimensionsMap: &map[string]*string{"EventSourceMappingUUID": c.mappingID},
			Statistic:     jsii.String(statistic),
			Period:        minute,
			Label:         jsii.String(label),
		})
	}
	needed := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(fmt.Sprintf("CEIL(concurrency / %d)", invokesPerPoller)),
		UsingMetrics: &map[string]awscloudwatch.IMetric{
			"concurrency": c.Function.Metric(jsii.String("ConcurrentExecutions"), &awscloudwatch.MetricOptions{Statistic: jsii.String("Maximum"), Period: minute}),
		},
		Label:  jsii.String(fmt.Sprintf("pollers the concurrency needs (concurrent executions / %d)", invokesPerPoller)),
		Period: minute,
	})
	return []awscloudwatch.IWidget{
		graph("Event source: provisioned pollers", gridWidth/2, &[]awscloudwatch.IMetric{
			mapping("ProvisionedPollers", "Maximum", "pollers running"), needed,
		}, &[]*awscloudwatch.HorizontalAnnotation{
			{Value: jsii.Number(c.Config.MinPollers), Label: jsii.String("MinPollers")},
			{Value: jsii.Number(c.Config.MaxPollers), Label: jsii.String("MaxPollers")},
		}),
		graph("Event source: messages (count per minute)", gridWidth/2, &[]awscloudwatch.IMetric{
			mapping("PolledEventCount", "Sum", "polled"),
			mapping("InvokedEventCount", "Sum", "invoked"),
			mapping("DeletedEventCount", "Sum", "deleted (done)"),
			mapping("FailedInvokeEventCount", "Sum", "failed (or with batch item failures)"),
		}, nil),
	}
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
