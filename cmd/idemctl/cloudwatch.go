package main

import (
	"context"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
)

const (
	// cloudWatchTimeout bounds the metric read: stats falls back to what it
	// can read itself rather than wait (an endpoint without CloudWatch, an
	// account without the permission).
	cloudWatchTimeout = 5 * time.Second
	// metricWindow is how far back a datapoint is taken: SQS publishes
	// every minute while a queue is active.
	metricWindow = 15 * time.Minute
	// maxNote bounds an error kept as a note in stats' output.
	maxNote = 160
)

// oldest is the age of a queue's oldest message and where it comes from.
type oldest struct {
	seconds      *int64
	source, note string
}

// oldestAges reads ApproximateAgeOfOldestMessage of each queue (one
// request for all); a queue with an empty url is skipped.
func (a *app) oldestAges(ctx context.Context, queues []queue, now time.Time) []oldest {
	ages := make([]oldest, len(queues))
	var queries []cwtypes.MetricDataQuery
	for i, q := range queues {
		ages[i] = oldest{source: "none", note: "no CloudWatch datapoint in the last 15 minutes"}
		if q.url == "" {
			continue
		}
		queries = append(queries, cwtypes.MetricDataQuery{
			Id: aws.String("q" + strconv.Itoa(i)),
			MetricStat: &cwtypes.MetricStat{
				Metric: &cwtypes.Metric{
					Namespace:  aws.String("AWS/SQS"),
					MetricName: aws.String("ApproximateAgeOfOldestMessage"),
					Dimensions: []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String(q.name())}},
				},
				Period: aws.Int32(60),
				Stat:   aws.String("Maximum"),
			},
		})
	}
	if len(queries) == 0 {
		return ages
	}
	ctx, cancel := context.WithTimeout(ctx, cloudWatchTimeout)
	defer cancel()
	out, err := a.clients.cw.GetMetricData(ctx, &cloudwatch.GetMetricDataInput{
		StartTime: aws.Time(now.Add(-metricWindow)), EndTime: aws.Time(now),
		MetricDataQueries: queries, ScanBy: cwtypes.ScanByTimestampDescending,
	})
	if err != nil {
		note := "CloudWatch: " + oneLine(cause(err))
		if len(note) > maxNote {
			note = note[:maxNote] + "…"
		}
		for i := range ages {
			ages[i].note = note
		}
		return ages
	}
	for _, res := range out.MetricDataResults {
		i, err := strconv.Atoi(aws.ToString(res.Id)[1:])
		if err != nil || i >= len(ages) || len(res.Values) == 0 {
			continue
		}
		s := int64(res.Values[0])
		ages[i] = oldest{seconds: &s, source: "cloudwatch", note: "ApproximateAgeOfOldestMessage at " + stamp(res.Timestamps[0])}
	}
	return ages
}
