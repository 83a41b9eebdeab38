package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
)

// Default asset directories; the Makefile builds the arm64 bootstraps there.
const (
	DefaultConsumerCode = "build/consumer"
	DefaultProducerCode = "build/producer"
)

// Environment variable names the functions read.
const (
	EnvIdemTable        = "IDEM_TABLE"
	EnvLedgerTable      = "LEDGER_TABLE"
	EnvNamespace        = "IDEM_NAMESPACE"
	EnvMode             = "IDEM_MODE"
	EnvRetention        = "IDEM_RETENTION"
	EnvSafetyMargin     = "IDEM_SAFETY_MARGIN"
	EnvBatchConcurrency = "BATCH_CONCURRENCY"
	EnvLogLevel         = "LOG_LEVEL"
	EnvEffectURL        = "EFFECT_URL"
	EnvQueueURL         = "QUEUE_URL"
)

// Idempotency namespaces (env IDEM_NAMESPACE) of the two functions. They
// must differ: both functions share the receipt table and key their receipts
// by orderId, so with one namespace every consumer delivery would find the
// producer's receipt for the same order and be skipped as a duplicate.
const (
	ConsumerNamespace = "consumer"
	ProducerNamespace = "producer"
)

// receiptActions: the idem library (pkg/idem/dynamostore) calls only GetItem
// and UpdateItem, and commits transactions whose receipt item is an Update
// (TransactWriteItems is authorized per item action; there is no
// dynamodb:TransactWriteItems IAM action). No PutItem, DeleteItem, Scan,
// Query or Batch*.
var receiptActions = []string{
	"dynamodb:GetItem",
	"dynamodb:UpdateItem",
}

// ledgerActions: the consumer's effect is one UpdateItem per order, either
// direct (lease mode) or inside the receipt's transaction (transactional).
var ledgerActions = []string{
	"dynamodb:UpdateItem",
}

// StackProps configures NewStack. Empty code dirs mean the defaults above.
type StackProps struct {
	awscdk.StackProps
	Config       Config
	ConsumerCode string // directory containing the consumer's bootstrap
	ProducerCode string // directory containing the producer's bootstrap
}

// NewStack builds the SQS -> Lambda exactly-once stack. It panics on an
// invalid Config, like CDK constructors do on invalid props.
func NewStack(scope constructs.Construct, id string, props *StackProps) awscdk.Stack {
	cfg := props.Config
	if err := cfg.Validate(); err != nil {
		panic(fmt.Sprintf("invalid infra config: %v", err))
	}
	consumerCode, producerCode := props.ConsumerCode, props.ProducerCode
	if consumerCode == "" {
		consumerCode = DefaultConsumerCode
	}
	if producerCode == "" {
		producerCode = DefaultProducerCode
	}

	stack := awscdk.NewStack(scope, &id, &props.StackProps)

	// Queues.
	dlq := awssqs.NewQueue(stack, jsii.String("DeadLetterQueue"), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: seconds(cfg.DLQRetention),
		RemovalPolicy:   cfg.RemovalPolicy,
	})
	queue := awssqs.NewQueue(stack, jsii.String("Queue"), &awssqs.QueueProps{
		Encryption:        awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		VisibilityTimeout: seconds(cfg.VisibilityTimeout()),
		RetentionPeriod:   seconds(cfg.QueueRetention),
		RemovalPolicy:     cfg.RemovalPolicy,
		DeadLetterQueue: &awssqs.DeadLetterQueue{
			Queue:           dlq,
			MaxReceiveCount: jsii.Number(cfg.MaxReceiveCount),
		},
	})
	// AwsSolutions-SQS3 recognizes the DLQ by the redrive policy pointing at
	// it; the Serverless pack does not, hence one suppression.
	cdknag.NagSuppressions_AddResourceSuppressions(dlq, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String("Serverless-SQSRedrivePolicy"),
		Reason: jsii.String("This queue is itself the dead-letter queue of the orders queue; failed messages stay here for an operator to inspect and redrive."),
	}}, jsii.Bool(true))

	// Tables.
	idemTable := awsdynamodb.NewTable(stack, jsii.String("IdempotencyTable"), &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{
			Name: jsii.String(dynamostore.DefaultSchema.PartitionKey),
			Type: awsdynamodb.AttributeType_STRING,
		},
		TimeToLiveAttribute:              jsii.String(dynamostore.DefaultSchema.TTL),
		BillingMode:                      awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: pitr(),
		RemovalPolicy:                    cfg.RemovalPolicy,
	})
	ledgerTable := awsdynamodb.NewTable(stack, jsii.String("LedgerTable"), &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{
			Name: jsii.String("orderId"),
			Type: awsdynamodb.AttributeType_STRING,
		},
		BillingMode:                      awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: pitr(),
		RemovalPolicy:                    cfg.RemovalPolicy,
	})

	// Functions.
	consumerEnv := map[string]*string{
		EnvIdemTable:        idemTable.TableName(),
		EnvLedgerTable:      ledgerTable.TableName(),
		EnvNamespace:        jsii.String(ConsumerNamespace),
		EnvMode:             jsii.String(cfg.Mode),
		EnvRetention:        jsii.String(cfg.ReceiptRetention.String()),
		EnvSafetyMargin:     jsii.String(cfg.SafetyMargin.String()),
		EnvBatchConcurrency: jsii.String(strconv.Itoa(cfg.BatchSize)),
		EnvLogLevel:         jsii.String("INFO"),
	}
	if cfg.EffectURL != "" {
		consumerEnv[EnvEffectURL] = jsii.String(cfg.EffectURL)
	}
	consumer := newFunction(stack, "Consumer", cfg, consumerCode, consumerEnv,
		"Invoked only synchronously, by the SQS event source mapping; failed messages go to the orders queue's redrive DLQ.")
	idemTable.Grant(consumer, *jsii.Strings(receiptActions...)...)
	ledgerTable.Grant(consumer, *jsii.Strings(ledgerActions...)...)
	// The event source grants the SQS consume actions on this queue only.
	consumer.AddEventSource(awslambdaeventsources.NewSqsEventSource(queue, &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(cfg.BatchSize),
		ReportBatchItemFailures: jsii.Bool(true),
		MaxConcurrency:          jsii.Number(cfg.MaxConcurrency),
	}))

	producer := newFunction(stack, "Producer", cfg, producerCode, map[string]*string{
		EnvQueueURL:     queue.QueueUrl(),
		EnvIdemTable:    idemTable.TableName(),
		EnvNamespace:    jsii.String(ProducerNamespace),
		EnvRetention:    jsii.String(cfg.ReceiptRetention.String()),
		EnvSafetyMargin: jsii.String(cfg.SafetyMargin.String()),
		EnvLogLevel:     jsii.String("INFO"),
	}, "Invoked only synchronously (RequestResponse) by clients and the test suite, which see errors directly; there are no async events to dead-letter.")
	queue.GrantSendMessages(producer)
	idemTable.Grant(producer, *jsii.Strings(receiptActions...)...)

	// The mapping is a child of the consumer (reached by applyToChildren).
	// SQS mappings cannot have an on-failure destination; the redrive policy
	// is the failure path.
	cdknag.NagSuppressions_AddResourceSuppressions(consumer, &[]*cdknag.NagPackSuppression{
		{Id: jsii.String("Serverless-LambdaEventSourceMappingDestination"), Reason: jsii.String("SQS event source mappings do not support OnFailure destinations; failed messages go to the queue's redrive DLQ after MaxReceiveCount receives.")},
	}, jsii.Bool(true))

	addAlarms(stack, cfg, queue, dlq, consumer)

	out := func(id string, v *string) { awscdk.NewCfnOutput(stack, &id, &awscdk.CfnOutputProps{Value: v}) }
	out("QueueUrl", queue.QueueUrl())
	out("DeadLetterQueueUrl", dlq.QueueUrl())
	out("IdempotencyTableName", idemTable.TableName())
	out("LedgerTableName", ledgerTable.TableName())
	out("ProducerFunctionName", producer.FunctionName())
	out("ConsumerFunctionName", consumer.FunctionName())
	return stack
}

// newFunction creates an arm64 provided.al2023 function with its own role and
// log group. The role is hand-made so that no AWS managed policy
// (AWSLambdaBasicExecutionRole allows writing to every log group) is attached:
// it may write to its own log group only. dlqReason documents why the function needs no async-invocation DLQ.
func newFunction(stack awscdk.Stack, id string, cfg Config, codeDir string, env map[string]*string, dlqReason string) awslambda.Function {
	role := awsiam.NewRole(stack, jsii.String("Role"+id), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("Execution role of the " + id + " function"),
	})
	logGroup := awslogs.NewLogGroup(stack, jsii.String("LogGroup"+id), &awslogs.LogGroupProps{
		Retention:     cfg.LogRetention,
		RemovalPolicy: cfg.RemovalPolicy,
	})
	logGroup.GrantWrite(role)

	fn := awslambda.NewFunction(stack, jsii.String(id), &awslambda.FunctionProps{
		Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture: awslambda.Architecture_ARM_64(),
		Handler:      jsii.String("bootstrap"),
		Code:         awslambda.Code_FromAsset(jsii.String(codeDir), nil),
		Timeout:      seconds(cfg.FunctionTimeout),
		MemorySize:   jsii.Number(cfg.MemoryMB),
		Tracing:      awslambda.Tracing_ACTIVE,
		Role:         role,
		LogGroup:     logGroup,
		Environment:  &env,
	})

	cdknag.NagSuppressions_AddResourceSuppressions(role, &[]*cdknag.NagPackSuppression{{
		Id:        jsii.String("AwsSolutions-IAM5"),
		Reason:    jsii.String("Active X-Ray tracing needs xray:PutTraceSegments and xray:PutTelemetryRecords, which support no resource-level permissions (Resource '*')."),
		AppliesTo: &[]interface{}{"Resource::*"},
	}}, jsii.Bool(true))
	cdknag.NagSuppressions_AddResourceSuppressions(fn, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String("Serverless-LambdaDLQ"),
		Reason: jsii.String(dlqReason),
	}}, jsii.Bool(false))
	return fn
}

// addAlarms: anything in the DLQ, a backlog older than retries can explain,
// and any function error (with ReportBatchItemFailures a failed message is a
// partial batch response, so Errors > 0 means a crash or timeout). With
// cfg.AlarmTopicARN set, every alarm notifies that (imported, not created)
// SNS topic.
func addAlarms(stack awscdk.Stack, cfg Config, queue, dlq awssqs.Queue, consumer awslambda.Function) {
	minute := awscdk.Duration_Minutes(jsii.Number(1))
	// Every alarm fires on one period above its threshold; missing data
	// (an idle queue) is fine.
	alarm := func(id, description, statistic string, metric func(*awscloudwatch.MetricOptions) awscloudwatch.Metric, threshold float64) awscloudwatch.Alarm {
		return awscloudwatch.NewAlarm(stack, jsii.String(id), &awscloudwatch.AlarmProps{
			AlarmDescription:   jsii.String(description),
			Metric:             metric(&awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String(statistic)}),
			Threshold:          jsii.Number(threshold),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
			EvaluationPeriods:  jsii.Number(1),
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
	}
	alarms := []awscloudwatch.Alarm{
		alarm("AlarmDeadLetterQueueNotEmpty", "Messages failed MaxReceiveCount times and were dead-lettered.",
			"Maximum", dlq.MetricApproximateNumberOfMessagesVisible, 0),
		alarm("AlarmQueueBacklogAge",
			fmt.Sprintf("Oldest message is older than (MaxReceiveCount+1) x visibility timeout = %s: the consumer is not keeping up.", cfg.BacklogAgeThreshold()),
			"Maximum", queue.MetricApproximateAgeOfOldestMessage, cfg.BacklogAgeThreshold().Seconds()),
		alarm("AlarmConsumerErrors", "The consumer function crashed or timed out.",
			"Sum", consumer.MetricErrors, 0),
	}
	if cfg.AlarmTopicARN == "" {
		return
	}
	topic := awssns.Topic_FromTopicArn(stack, jsii.String("AlarmTopic"), jsii.String(cfg.AlarmTopicARN))
	action := awscloudwatchactions.NewSnsAction(topic)
	for _, a := range alarms {
		a.AddAlarmAction(action)
	}
}

func seconds(d time.Duration) awscdk.Duration {
	return awscdk.Duration_Seconds(jsii.Number(d.Seconds()))
}

func pitr() *awsdynamodb.PointInTimeRecoverySpecification {
	return &awsdynamodb.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: jsii.Bool(true)}
}
