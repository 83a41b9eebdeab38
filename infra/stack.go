package main

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/infra/exactlyonce"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
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

// NewStack builds the example app: the exactly-once consumer, the tables
// its effect writes (contract.EffectTables), and the producer that sends
// messages without duplicate sends. It panics on an invalid Config, like CDK
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

	// The effect's tables (contract.EffectTables) and settings, named in
	// the consumer's environment.
	consumerEnv := map[string]*string{}
	tables := map[string]awsdynamodb.Table{}
	for _, t := range contract.EffectTables {
		tables[t.Env] = awsdynamodb.NewTable(stack, jsii.String(tableID(t.Env)), &awsdynamodb.TableProps{
			PartitionKey:                     &awsdynamodb.Attribute{Name: jsii.String(t.PartitionKey), Type: awsdynamodb.AttributeType_STRING},
			BillingMode:                      awsdynamodb.BillingMode_PAY_PER_REQUEST,
			PointInTimeRecoverySpecification: exactlyonce.PointInTimeRecovery(),
			RemovalPolicy:                    cfg.RemovalPolicy,
			Encryption:                       exactlyonce.TableEncryption(key),
			EncryptionKey:                    key,
		})
		consumerEnv[t.Env] = tables[t.Env].TableName()
	}
	for name, v := range cfg.Effect {
		consumerEnv[name] = jsii.String(v)
	}
	orders := exactlyonce.NewConsumer(stack, consumerID, &exactlyonce.ConsumerProps{
		Config:        cfg.Config,
		Code:          awslambda.Code_FromAsset(jsii.String(consumerCode), nil),
		Environment:   consumerEnv,
		EncryptionKey: key,
	})
	// The effect's writes, direct (lease mode) or inside the receipt's
	// transaction (transactional). The tables share the consumer's key,
	// which the consumer may already use.
	for _, t := range contract.EffectTables {
		tables[t.Env].Grant(orders.Function, *jsii.Strings(t.Actions...)...)
	}

	producerEnv := orders.ReceiptEnvironment(contract.ProducerNamespace)
	producerEnv[contract.EnvQueueURL] = orders.Queue.QueueUrl()
	producerEnv[consumer.EnvLogLevel] = jsii.String(consumer.DefaultLogLevel)
	producer := exactlyonce.NewFunction(stack, "Producer", &exactlyonce.FunctionProps{
		Code:                awslambda.Code_FromAsset(jsii.String(producerCode), nil),
		Timeout:             cfg.FunctionTimeout,
		MemoryMB:            cfg.MemoryMB,
		Environment:         producerEnv,
		ReservedConcurrency: cfg.ProducerReservedConcurrency,
		LogRetention:        cfg.LogRetention,
		RemovalPolicy:       cfg.RemovalPolicy,
		EncryptionKey:       key,
		Tracing:             cfg.Tracing,
		NoDLQReason:         "Invoked only synchronously (RequestResponse) by clients and the test suite, which see errors directly; there are no async events to dead-letter.",
	})
	orders.GrantSend(producer)
	orders.GrantReceipts(producer)
	orders.Dashboard.AddWidgets(exactlyonce.FunctionWidgets(producer, "Producer")...)

	// Operators and the deployed-stack test find the rest by these; the
	// consumer's own (queue, DLQ, receipt table, function, namespace, key)
	// are the construct's.
	out := func(id string, v *string) { awscdk.NewCfnOutput(stack, &id, &awscdk.CfnOutputProps{Value: v}) }
	out(contract.OutputProducerFunctionName, producer.FunctionName())
	for _, t := range contract.EffectTables {
		out(tableID(t.Env)+"Name", tables[t.Env].TableName())
	}
	return stack
}

// tableID is the construct id of the table named in variable env:
// LEDGER_TABLE becomes LedgerTable, the id it had before tables were
// declared, so a deployed stack keeps its table.
func tableID(env string) string {
	var b strings.Builder
	for w := range strings.SplitSeq(strings.ToLower(env), "_") {
		if w != "" {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}
