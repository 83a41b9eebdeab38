package main

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
)

// The parts of the SDK clients idemctl calls, with the SDK's own method
// signatures, so that the tests run every command against fakes.

// DynamoDB is what idemctl calls on the receipt table: dynamostore's API
// (its Store reads a record as the library does), scans and queries over
// the namespace, and DescribeTable to check the table is a receipt table.
type DynamoDB interface {
	dynamostore.API
	Scan(ctx context.Context, params *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	Query(ctx context.Context, params *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	DescribeTable(ctx context.Context, params *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// SQS is what idemctl calls on the queue and the dead-letter queue. It
// never receives from the source queue (a receive there counts towards
// the message's maxReceiveCount).
type SQS interface {
	GetQueueAttributes(ctx context.Context, params *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	ReceiveMessage(ctx context.Context, params *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, params *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
	SendMessage(ctx context.Context, params *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	DeleteMessage(ctx context.Context, params *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
}

// CloudFormation finds the consumer's resources by the stack's outputs.
type CloudFormation interface {
	DescribeStacks(ctx context.Context, params *cloudformation.DescribeStacksInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
}

// CloudWatch reads the queues' ApproximateAgeOfOldestMessage.
type CloudWatch interface {
	GetMetricData(ctx context.Context, params *cloudwatch.GetMetricDataInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error)
}

var (
	_ DynamoDB       = (*dynamodb.Client)(nil)
	_ SQS            = (*sqs.Client)(nil)
	_ CloudFormation = (*cloudformation.Client)(nil)
	_ CloudWatch     = (*cloudwatch.Client)(nil)
)

// clients are the AWS clients of one run.
type clients struct {
	ddb DynamoDB
	sqs SQS
	cfn CloudFormation
	cw  CloudWatch
}
