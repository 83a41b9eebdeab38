//go:build e2e

package hotel_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	cwltypes "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"

	"example.com/hotel"
)

// consumerID is the construct id in infra/main.go: its outputs' prefix.
const consumerID = "Bookings"

// clients talk to AWS_ENDPOINT_URL (LocalStack) with dummy credentials in
// us-east-1, where cdklocal deploys.
type clients struct {
	cfn  *cloudformation.Client
	sqs  *sqs.Client
	ddb  *dynamodb.Client
	fn   *lambda.Client
	logs *cloudwatchlogs.Client
	cw   *cloudwatch.Client
}

func newClients(ctx context.Context, t *testing.T) clients {
	t.Helper()
	if os.Getenv("AWS_ENDPOINT_URL") == "" {
		t.Fatal("AWS_ENDPOINT_URL is not set: run integration/scripts/e2e-example.sh under localstack.sh run --deploy")
	}
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
	if err != nil {
		t.Fatal(err)
	}
	return clients{
		cfn: cloudformation.NewFromConfig(cfg), sqs: sqs.NewFromConfig(cfg), ddb: dynamodb.NewFromConfig(cfg),
		fn: lambda.NewFromConfig(cfg), logs: cloudwatchlogs.NewFromConfig(cfg), cw: cloudwatch.NewFromConfig(cfg),
	}
}

// stack is the deployed stack, found by its outputs.
type stack struct {
	record
	queueURL, dlqURL, function, namespace, reservations string
	physical                                            map[string]string // logical id -> physical id
	template                                            string            // as deployed
}

func (c clients) stack(ctx context.Context, t *testing.T) stack {
	t.Helper()
	s := stack{record: record{StackName: os.Getenv("HOTEL_STACK"), Resources: map[string]string{}}, physical: map[string]string{}}
	if s.StackName == "" {
		s.StackName = "HotelLocal"
	}
	out, err := c.cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(s.StackName)})
	if err != nil || len(out.Stacks) != 1 {
		t.Fatalf("stack %s: %v (deploy it first)", s.StackName, err)
	}
	outputs := map[string]string{}
	for _, o := range out.Stacks[0].Outputs {
		outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	for key, dst := range map[string]*string{
		consumerID + consumer.OutputQueueURL: &s.queueURL, consumerID + consumer.OutputDeadLetterQueueURL: &s.dlqURL,
		consumerID + consumer.OutputFunctionName: &s.function, consumerID + consumer.OutputNamespace: &s.namespace,
		hotel.OutputReservationsTable: &s.reservations,
	} {
		if *dst = outputs[key]; *dst == "" {
			t.Fatalf("stack %s has no output %s: %v", s.StackName, key, outputs)
		}
	}
	res, err := c.cfn.DescribeStackResources(ctx, &cloudformation.DescribeStackResourcesInput{StackName: aws.String(s.StackName)})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.StackResources {
		phys := aws.ToString(r.PhysicalResourceId)
		s.Resources[phys] = aws.ToString(r.ResourceType)
		s.physical[aws.ToString(r.LogicalResourceId)] = phys
	}
	tpl, err := c.cfn.GetTemplate(ctx, &cloudformation.GetTemplateInput{StackName: aws.String(s.StackName)})
	if err != nil {
		t.Fatalf("stack %s: template: %v", s.StackName, err)
	}
	s.template = aws.ToString(tpl.TemplateBody)
	return s
}

// gone reports whether the resource phys of type typ no longer exists.
// Types not checked one by one (roles, policies, alarms, the dashboard)
// count as gone with the stack.
func (c clients) gone(ctx context.Context, typ, phys string) (bool, error) {
	var err error
	switch typ {
	case "AWS::SQS::Queue":
		_, err = c.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(phys)})
		if missing := (*sqstypes.QueueDoesNotExist)(nil); errors.As(err, &missing) {
			return true, nil
		}
	case "AWS::DynamoDB::Table":
		_, err = c.ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(phys)})
		if missing := (*ddbtypes.ResourceNotFoundException)(nil); errors.As(err, &missing) {
			return true, nil
		}
	case "AWS::Lambda::Function":
		_, err = c.fn.GetFunction(ctx, &lambda.GetFunctionInput{FunctionName: aws.String(phys)})
		if missing := (*lambdatypes.ResourceNotFoundException)(nil); errors.As(err, &missing) {
			return true, nil
		}
	case "AWS::Lambda::EventSourceMapping":
		_, err = c.fn.GetEventSourceMapping(ctx, &lambda.GetEventSourceMappingInput{UUID: aws.String(phys)})
		if missing := (*lambdatypes.ResourceNotFoundException)(nil); errors.As(err, &missing) {
			return true, nil
		}
	case "AWS::Logs::LogGroup":
		out, err := c.logs.DescribeLogGroups(ctx, &cloudwatchlogs.DescribeLogGroupsInput{LogGroupNamePrefix: aws.String(phys)})
		if err != nil {
			return false, err
		}
		return !slices.ContainsFunc(out.LogGroups, func(g cwltypes.LogGroup) bool { return aws.ToString(g.LogGroupName) == phys }), nil
	default:
		return true, nil
	}
	return false, err
}

// record is what TestBookings leaves for TestNothingLeft.
type record struct {
	StackName string
	Resources map[string]string // physical id -> type
}

func recordPath() string {
	if p := os.Getenv("HOTEL_E2E_RECORD"); p != "" {
		return p
	}
	return filepath.Join(os.TempDir(), "hotel-e2e.json")
}

func (r record) remember() error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(recordPath()), 0o755); err != nil {
		return err
	}
	return os.WriteFile(recordPath(), b, 0o644)
}

func recall() (record, error) {
	var r record
	b, err := os.ReadFile(recordPath())
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(b, &r)
}
