//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

type resource struct {
	Type       string         `json:"Type"`
	Properties map[string]any `json:"Properties"`
}

// compareWithTemplate checks the deployed resources against the template.
// What the invariant depends on (visibility, redrive, timeouts, partial batch
// responses, TTL) must match; the rest LocalStack does not emulate is
// reported, not failed.
func (d *deployment) compareWithTemplate(ctx context.Context, t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(d.template)
	if err != nil {
		t.Fatalf("template: %v", err)
	}
	var tpl struct {
		Resources map[string]resource `json:"Resources"`
	}
	if err := json.Unmarshal(b, &tpl); err != nil {
		t.Fatal(err)
	}
	physical := map[string]string{}
	for _, r := range d.resources {
		physical[aws.ToString(r.LogicalResourceId)] = aws.ToString(r.PhysicalResourceId)
	}
	must := func(what string, got, want any) {
		if text(got) != text(want) {
			t.Errorf("%s: deployed %s, template %s", what, text(got), text(want))
		}
	}
	differs := func(what string, got, want any) {
		if text(got) != text(want) {
			t.Logf("LocalStack differs from the template: %s: deployed %s, template %s", what, text(got), text(want))
		}
	}
	for _, id := range sortedKeys(tpl.Resources) {
		r, phys := tpl.Resources[id], physical[id]
		switch r.Type {
		case "AWS::SQS::Queue":
			out, err := d.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
				QueueUrl: aws.String(phys), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll},
			})
			if err != nil {
				t.Errorf("queue %s: %v", id, err)
				continue
			}
			a := out.Attributes
			if v, ok := r.Properties["VisibilityTimeout"]; ok {
				must(id+" VisibilityTimeout", a["VisibilityTimeout"], v)
			}
			must(id+" MessageRetentionPeriod", a["MessageRetentionPeriod"], r.Properties["MessageRetentionPeriod"])
			if rp, ok := r.Properties["RedrivePolicy"].(map[string]any); ok {
				var got struct {
					MaxReceiveCount json.Number `json:"maxReceiveCount"`
				}
				_ = json.Unmarshal([]byte(a["RedrivePolicy"]), &got)
				must(id+" maxReceiveCount", got.MaxReceiveCount, rp["maxReceiveCount"])
			}
			differs(id+" SqsManagedSseEnabled (reported, not enforced)", a["SqsManagedSseEnabled"], r.Properties["SqsManagedSseEnabled"])
		case "AWS::DynamoDB::Table":
			ttl, err := d.ddb.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(phys)})
			if err != nil {
				t.Errorf("table %s: %v", id, err)
				continue
			}
			if spec, ok := r.Properties["TimeToLiveSpecification"].(map[string]any); ok {
				must(id+" TTL attribute", aws.ToString(ttl.TimeToLiveDescription.AttributeName), spec["AttributeName"])
			}
			backups, err := d.ddb.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String(phys)})
			if err == nil && backups.ContinuousBackupsDescription != nil && backups.ContinuousBackupsDescription.PointInTimeRecoveryDescription != nil {
				pitr := backups.ContinuousBackupsDescription.PointInTimeRecoveryDescription.PointInTimeRecoveryStatus
				differs(id+" point-in-time recovery", pitr, "ENABLED")
			}
		case "AWS::Lambda::Function":
			out, err := d.lambda.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(phys)})
			if err != nil {
				t.Errorf("function %s: %v", id, err)
				continue
			}
			must(id+" Timeout", aws.ToInt32(out.Timeout), r.Properties["Timeout"])
			must(id+" MemorySize", aws.ToInt32(out.MemorySize), r.Properties["MemorySize"])
			if lc, ok := r.Properties["LoggingConfig"].(map[string]any); ok && lc["LogGroup"] != nil {
				t.Logf("LocalStack differs from the template: %s logs to /aws/lambda/%s, not to the stack's log group (LoggingConfig is accepted, not applied)", id, phys)
			}
		case "AWS::Lambda::EventSourceMapping":
			out, err := d.lambda.GetEventSourceMapping(ctx, &lambda.GetEventSourceMappingInput{UUID: aws.String(phys)})
			if err != nil {
				t.Errorf("mapping %s: %v", id, err)
				continue
			}
			must(id+" BatchSize", aws.ToInt32(out.BatchSize), r.Properties["BatchSize"])
			must(id+" FunctionResponseTypes", fmt.Sprint(out.FunctionResponseTypes), fmt.Sprint(r.Properties["FunctionResponseTypes"]))
			if sc, ok := r.Properties["ScalingConfig"].(map[string]any); ok {
				got := "unset"
				if out.ScalingConfig != nil && out.ScalingConfig.MaximumConcurrency != nil {
					got = strconv.Itoa(int(*out.ScalingConfig.MaximumConcurrency))
				}
				differs(id+" MaximumConcurrency (LocalStack's poller runs one batch at a time whatever it says)", got, sc["MaximumConcurrency"])
			}
		case "AWS::Logs::LogGroup":
			out, err := d.logs.DescribeLogGroups(ctx, &cloudwatchlogs.DescribeLogGroupsInput{LogGroupNamePrefix: aws.String(phys)})
			if err != nil || len(out.LogGroups) == 0 {
				differs(id+" log group", "absent", phys)
				continue
			}
			got := "none"
			if out.LogGroups[0].RetentionInDays != nil {
				got = strconv.Itoa(int(*out.LogGroups[0].RetentionInDays))
			}
			differs(id+" RetentionInDays", got, r.Properties["RetentionInDays"])
		}
	}
}

// text formats a value of the API or of the template (JSON numbers decode
// as float64) the same way: 1209600, not 1.2096e+06.
func text(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}
