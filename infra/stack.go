package main

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/infra/exactlyonce"
)

// Default asset directories; the Makefile builds the arm64 bootstraps there.
const (
	DefaultConsumerCode = "build/consumer"
	DefaultProducerCode = "build/producer"
	// The localstack profile's: host-arch bootstraps (make build-local),
	// since LocalStack runs the functions on this machine.
	LocalConsumerCode = "build/local/consumer"
	LocalProducerCode = "build/local/producer"
)

// consumerID is the construct id of the consumer. CDK leaves "Default" out
// of logical ids, so the consumer's queues, tables and function keep the
// logical ids they had before the construct existed (when they were
// defined in the stack itself): an existing deployment updates them in place
// instead of replacing the queues and the retained receipt table, which
// would strand messages and forget every receipt. A new app should name its
// consumer instead (see the package example).
const consumerID = "Default"

// StackProps configures NewStack. Empty code dirs mean the defaults above.
type StackProps struct {
	awscdk.StackProps
	Config       Config
	ConsumerCode string // directory containing the consumer's bootstrap
	ProducerCode string // directory containing the producer's bootstrap
}

// NewStack builds the example app: the exactly-once consumer, the ledger
// table its example effect writes, and the producer that sends orders
// without duplicate sends. It panics on an invalid Config, like CDK
// constructors do on invalid props.
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
	var key awskms.IKey
	if cfg.CustomerManagedKey {
		key = exactlyonce.NewKey(stack, "Key", cfg.RemovalPolicy)
	}

	// The example effect's table: one item per order (functions/consumer/effect.go).
	ledger := awsdynamodb.NewTable(stack, jsii.String("LedgerTable"), &awsdynamodb.TableProps{
		PartitionKey:                     &awsdynamodb.Attribute{Name: jsii.String("orderId"), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:                      awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: exactlyonce.PointInTimeRecovery(),
		RemovalPolicy:                    cfg.RemovalPolicy,
		Encryption:                       exactlyonce.TableEncryption(key),
		EncryptionKey:                    key,
	})
	consumerEnv := map[string]*string{contract.EnvLedgerTable: ledger.TableName()}
	if cfg.EffectURL != "" {
		consumerEnv[contract.EnvEffectURL] = jsii.String(cfg.EffectURL)
	}
	orders := exactlyonce.NewConsumer(stack, consumerID, &exactlyonce.ConsumerProps{
		Config:      cfg.Config,
		Code:        awslambda.Code_FromAsset(jsii.String(consumerCode), nil),
		Environment: consumerEnv,
		Key:         key,
	})
	// The effect is one UpdateItem per order, direct (lease mode) or inside
	// the receipt's transaction (transactional). The ledger shares the
	// consumer's key, which the consumer may already use.
	ledger.Grant(orders.Function, jsii.String("dynamodb:UpdateItem"))

	producerEnv := orders.ReceiptEnvironment(contract.ProducerNamespace)
	producerEnv[contract.EnvQueueURL] = orders.Queue.QueueUrl()
	producerEnv[contract.EnvLogLevel] = jsii.String(contract.DefaultLogLevel)
	producer := exactlyonce.NewFunction(stack, "Producer", &exactlyonce.FunctionProps{
		Code:                awslambda.Code_FromAsset(jsii.String(producerCode), nil),
		Timeout:             cfg.FunctionTimeout,
		MemoryMB:            cfg.MemoryMB,
		Environment:         producerEnv,
		ReservedConcurrency: cfg.ProducerReservedConcurrency,
		LogRetention:        cfg.LogRetention,
		RemovalPolicy:       cfg.RemovalPolicy,
		Key:                 key,
		NoDLQReason:         "Invoked only synchronously (RequestResponse) by clients and the test suite, which see errors directly; there are no async events to dead-letter.",
	})
	orders.GrantSend(producer)
	orders.GrantReceipts(producer)
	orders.Dashboard.AddWidgets(exactlyonce.FunctionWidgets(producer, "Producer")...)

	// The end-to-end test and operators read these from the deployed stack.
	out := func(id string, v *string) { awscdk.NewCfnOutput(stack, &id, &awscdk.CfnOutputProps{Value: v}) }
	out("QueueUrl", orders.Queue.QueueUrl())
	out("DeadLetterQueueUrl", orders.DeadLetterQueue.QueueUrl())
	out("IdempotencyTableName", orders.Receipts.TableName())
	out("LedgerTableName", ledger.TableName())
	out("ProducerFunctionName", producer.FunctionName())
	out("ConsumerFunctionName", orders.Function.FunctionName())
	return stack
}
