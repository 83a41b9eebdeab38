package exactlyonce

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
)

// ConsumerProps configures NewConsumer. Only Code or Main is required.
type ConsumerProps struct {
	// Config tunes the consumer; a zero field takes DefaultConfig's value.
	Config
	// Code is the consumer's bootstrap, a Go binary for provided.al2023 on
	// arm64 whose main is consumer.Start (pkg/idem/consumer), which reads
	// the environment this construct sets, e.g.
	// awslambda.Code_FromAsset(jsii.String("build/consumer"), nil).
	Code awslambda.Code
	// Main is the Go package of the consumer's main (e.g. "./consumer",
	// relative to the CDK app's directory). Without Code, the construct
	// builds it for provided.al2023 on arm64 when the app synthesizes (go
	// build -tags lambda.norpc -trimpath: go on PATH). Under the LocalStack
	// preset (ContextLocalStack) it is built for this machine with the
	// fault switches (-tags sqsidem_faults, FAULT_FROM_MESSAGE=true) and
	// deployed instead of Code. Code or Main is required.
	Main string
	// Environment adds the effect's own variables (its tables, endpoints);
	// values may be tokens, e.g. table.TableName(). It may not set those
	// NewConsumer derives from Config and the receipt table
	// (derivedEnvironment); LOG_LEVEL defaults to INFO, and the runtime's
	// other variables (LOG_BODIES, IDEM_LEASE, IDEM_CACHE_SIZE) may be set.
	Environment map[string]*string
	// Secrets hands the function secrets, by variable: the variable holds
	// the secret's ARN, and the function's role may read that secret
	// (GrantRead; when CDK knows the secret's customer-managed key, also
	// decrypt with it through Secrets Manager). The function reads the value at init,
	// with pkg/idem/consumer's Runtime.Secret(ctx, name): the value is in
	// neither the template nor the function's configuration. A name may be
	// neither one the runtime reads (consumer.Variables) nor one
	// Environment sets.
	Secrets map[string]awssecretsmanager.ISecret
	// EncryptionKey, if set, encrypts the queues, the receipt table, the
	// log group and the function's environment with this customer-managed
	// key (see NewKey) instead of AWS-managed keys; the consumer's role may
	// use it. Not Config.Key, the business key.
	EncryptionKey awskms.IKey
	// Key is EncryptionKey's name before v0.3.0, taken as EncryptionKey;
	// setting both is an error. While it is here it hides Config.Key:
	// write props.Config.Key for the business key.
	//
	// Deprecated: use EncryptionKey. Removed in v0.4.0.
	Key awskms.IKey
	// Nag applies cdk-nag's AwsSolutions and Serverless packs (the ones
	// this repository's app is kept clean against) to the construct's own
	// resources, so that a finding is reported when the app synthesizes:
	// a clean consumer reports nothing. Leave it off when the app applies
	// the packs to the whole stack, or each finding shows twice.
	Nag bool
	// Instances is where the consumer runs on Lambda Managed Instances: an
	// existing capacity provider, or the subnets and security groups of
	// the one the construct creates (Consumer.CapacityProvider). Required
	// with Config.ManagedInstances, refused without it.
	Instances *Instances
}

// Consumer is an exactly-once SQS consumer: a queue with a dead-letter
// queue, a receipt table, the consumer function and its event source
// mapping, alarms and a dashboard. The effect's own resources are the
// caller's: grant them to Function (e.g. table.Grant(c.Function, ...)) and
// name them in ConsumerProps.Environment.
type Consumer struct {
	constructs.Construct
	// Config is the configuration in force: the props' Config with the
	// defaults applied.
	Config          Config
	Queue           awssqs.Queue
	DeadLetterQueue awssqs.Queue
	// Receipts is the idempotency table (dynamostore.DefaultSchema).
	Receipts  awsdynamodb.Table
	Function  awslambda.Function
	Alarms    []awscloudwatch.Alarm
	Dashboard awscloudwatch.Dashboard
	// CapacityProvider is the capacity provider the function runs on
	// (props.Instances' or the one created for it); nil on Lambda's
	// default compute.
	CapacityProvider awslambda.ICapacityProvider

	key awskms.IKey
	// mappingID is the event source mapping's UUID, the dimension of its
	// metrics.
	mappingID *string
}

// receiptActions: the idem library (pkg/idem/dynamostore) calls only GetItem
// and UpdateItem, and commits transactions whose receipt item is an Update
// (TransactWriteItems is authorized per item action; there is no
// dynamodb:TransactWriteItems IAM action). No PutItem, DeleteItem, Scan,
// Query or Batch*.
var receiptActions = []string{"dynamodb:GetItem", "dynamodb:UpdateItem"}

// sendActions are those of awssqs.Queue.GrantSendMessages, which would also
// grant wildcard KMS actions on an SSE-KMS queue.
var sendActions = []string{"sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"}

// NewConsumer builds the consumer. Like CDK constructors on invalid props,
// it panics on an invalid configuration, listing every problem.
func NewConsumer(scope constructs.Construct, id string, props *ConsumerProps) *Consumer {
	cfg := props.Config.WithDefaults()
	if OnLocalStack(scope) {
		cfg = cfg.LocalStack()
	}
	errs := []error{cfg.Validate()}
	if props.Code == nil && props.Main == "" {
		errs = append(errs, errors.New("props.Code or props.Main is required: the consumer's bootstrap, or its Go package"))
	}
	if env := overlap(props.Environment, derivedEnvironment()); len(env) > 0 {
		errs = append(errs, fmt.Errorf("props.Environment must not set %s: NewConsumer derives them from Config", strings.Join(env, ", ")))
	}
	key, keyErr := encryptionKey(props.EncryptionKey, props.Key)
	errs = append(errs, checkSecrets(props), keyErr, checkInstances(cfg, props.Instances))
	if err := errors.Join(errs...); err != nil {
		panic(fmt.Sprintf("exactlyonce: invalid consumer %q: %v", id, err))
	}

	c := &Consumer{Config: cfg, key: key}
	// Registers c itself as the jsii object, so that c is a scope.
	constructs.NewConstruct_Override(c, scope, jsii.String(id))
	c.addQueues()
	c.addReceipts()
	c.addFunction(props)
	c.addAlarms(id)
	c.addDashboard()
	c.addOutputs(id)
	if props.Nag {
		applyNag(c)
	}
	return c
}

func (c *Consumer) addQueues() {
	cfg := c.Config
	encryption := awssqs.QueueEncryption_SQS_MANAGED
	if c.key != nil {
		encryption = awssqs.QueueEncryption_KMS
	}
	c.DeadLetterQueue = awssqs.NewQueue(c, jsii.String("DeadLetterQueue"), &awssqs.QueueProps{
		Encryption:          encryption,
		EncryptionMasterKey: c.key,
		EnforceSSL:          jsii.Bool(true),
		RetentionPeriod:     seconds(cfg.DLQRetention),
		RemovalPolicy:       cfg.RemovalPolicy,
	})
	c.Queue = awssqs.NewQueue(c, jsii.String("Queue"), &awssqs.QueueProps{
		Encryption:          encryption,
		EncryptionMasterKey: c.key,
		EnforceSSL:          jsii.Bool(true),
		VisibilityTimeout:   seconds(cfg.VisibilityTimeout()),
		RetentionPeriod:     seconds(cfg.QueueRetention),
		RemovalPolicy:       cfg.RemovalPolicy,
		DeadLetterQueue: &awssqs.DeadLetterQueue{
			Queue:           c.DeadLetterQueue,
			MaxReceiveCount: jsii.Number(cfg.MaxReceiveCount),
		},
	})
	// AwsSolutions-SQS3 recognizes the DLQ by the redrive policy pointing at
	// it; the Serverless pack does not, hence one suppression.
	cdknag.NagSuppressions_AddResourceSuppressions(c.DeadLetterQueue, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String("Serverless-SQSRedrivePolicy"),
		Reason: jsii.String("This queue is itself the consumer's dead-letter queue: messages that failed MaxReceiveCount times stay here for an operator to inspect and redrive."),
	}}, jsii.Bool(true))
}

func (c *Consumer) addReceipts() {
	c.Receipts = awsdynamodb.NewTable(c, jsii.String("IdempotencyTable"), &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{
			Name: jsii.String(dynamostore.DefaultSchema.PartitionKey),
			Type: awsdynamodb.AttributeType_STRING,
		},
		TimeToLiveAttribute:              jsii.String(dynamostore.DefaultSchema.TTL),
		BillingMode:                      awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: PointInTimeRecovery(),
		RemovalPolicy:                    c.Config.RemovalPolicy,
		Encryption:                       TableEncryption(c.key),
		EncryptionKey:                    c.key,
	})
}

func (c *Consumer) addFunction(props *ConsumerProps) {
	cfg := c.Config
	env := map[string]*string{consumer.EnvLogLevel: jsii.String(consumer.DefaultLogLevel)}
	for k, v := range props.Environment {
		env[k] = v
	}
	for name, secret := range props.Secrets {
		env[name] = secret.SecretArn()
	}
	env[consumer.EnvTable] = c.Receipts.TableName()
	env[consumer.EnvNamespace] = jsii.String(cfg.Namespace)
	env[consumer.EnvMode] = jsii.String(cfg.Mode)
	env[consumer.EnvUnknownOutcome] = jsii.String(cfg.UnknownOutcome)
	env[consumer.EnvRetention] = jsii.String(cfg.ReceiptRetention.String())
	env[consumer.EnvSafetyMargin] = jsii.String(cfg.SafetyMargin.String())
	env[consumer.EnvBatchConcurrency] = jsii.String(strconv.Itoa(cfg.BatchSize))
	env[consumer.EnvMaxReceiveCount] = jsii.String(strconv.Itoa(cfg.MaxReceiveCount))
	// The store backoff's base: a record that failed on the store stays
	// hidden for up to 2^n of it after its n-th receive.
	env[consumer.EnvVisibilityTimeout] = jsii.String(cfg.VisibilityTimeout().String())
	if cfg.Key != "" {
		env[consumer.EnvKey] = jsii.String(cfg.Key)
	}
	code := c.code(props, env)

	c.Function = NewFunction(c, functionID(cfg), &FunctionProps{
		Code:                code,
		Timeout:             cfg.FunctionTimeout,
		MemoryMB:            cfg.MemoryMB,
		Environment:         env,
		ReservedConcurrency: cfg.ReservedConcurrency,
		LogRetention:        cfg.LogRetention,
		RemovalPolicy:       cfg.RemovalPolicy,
		EncryptionKey:       c.key,
		Tracing:             cfg.Tracing,
		NoDLQReason:         "Invoked only synchronously, by the SQS event source mapping; failed messages go to the consumer's dead-letter queue through its queue's redrive policy.",
	})
	if props.Instances != nil {
		c.runOnInstances(props.Instances)
	}
	c.Receipts.Grant(c.Function, *jsii.Strings(receiptActions...)...)
	for _, secret := range props.Secrets {
		secret.GrantRead(c.Function, nil)
	}
	// Receiving from the SSE-KMS queue (kms:Decrypt) and reading and
	// writing receipts.
	grantKey(c.key, c.Function, tableKeyActions)
	// The event source grants the SQS consume actions on this queue only;
	// the runtime also sends a copy that met a slow holder on its last
	// receive back to this queue, delayed (sqsbatch.WithRequeue).
	c.Queue.Grant(c.Function, jsii.String("sqs:SendMessage"))
	source := awslambdaeventsources.NewSqsEventSource(c.Queue, mappingProps(cfg))
	c.Function.AddEventSource(source)
	c.mappingID = source.EventSourceMappingId()
	// The mapping is a child of the function (reached by applyToChildren).
	cdknag.NagSuppressions_AddResourceSuppressions(c.Function, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String("Serverless-LambdaEventSourceMappingDestination"),
		Reason: jsii.String("SQS event source mappings do not support OnFailure destinations; failed messages go to the consumer's dead-letter queue after MaxReceiveCount receives."),
	}}, jsii.Bool(true))
}

// mappingProps is the event source mapping: batches of BatchSize with
// partial batch responses, scaled by Lambda up to MaxConcurrency, or in
// provisioned mode by its pollers between MinPollers and MaxPollers. In
// provisioned mode the mapping also publishes its event counts
// (MetricsConfig EventCount: PolledEventCount, InvokedEventCount,
// FailedInvokeEventCount, DeletedEventCount), which the dashboard sets
// beside its ProvisionedPollers to size them.
func mappingProps(cfg Config) *awslambdaeventsources.SqsEventSourceProps {
	props := &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(cfg.BatchSize),
		ReportBatchItemFailures: jsii.Bool(true),
	}
	if !cfg.Provisioned() {
		props.MaxConcurrency = jsii.Number(cfg.MaxConcurrency)
		return props
	}
	props.ProvisionedPollerConfig = &awslambda.ProvisionedPollerConfig{
		MinimumPollers: jsii.Number(cfg.MinPollers),
		MaximumPollers: jsii.Number(cfg.MaxPollers),
	}
	props.MetricsConfig = &awslambda.MetricsConfig{Metrics: &[]awslambda.MetricType{awslambda.MetricType_EVENT_COUNT}}
	return props
}

// GrantSend lets grantee send messages to the queue (and use the key to do
// so, if there is one).
func (c *Consumer) GrantSend(grantee awsiam.IGrantable) {
	c.Queue.Grant(grantee, *jsii.Strings(sendActions...)...)
	grantKey(c.key, grantee, queueSendKeyActions)
}

// GrantReceipts lets grantee keep its own receipts in the receipt table,
// under its own namespace (see ReceiptEnvironment): a producer that must not
// send an order twice, for example.
func (c *Consumer) GrantReceipts(grantee awsiam.IGrantable) {
	c.Receipts.Grant(grantee, *jsii.Strings(receiptActions...)...)
	grantKey(c.key, grantee, tableKeyActions)
}

// ReceiptEnvironment is the environment of another function that keeps its
// receipts in this consumer's table (GrantReceipts): the table, its own
// namespace, and the retention and safety margin of Config, so receipts of
// both live equally long. namespace must differ from the consumer's, or
// each would take the other's receipts for its own.
func (c *Consumer) ReceiptEnvironment(namespace string) map[string]*string {
	if namespace == "" || namespace == c.Config.Namespace {
		panic(fmt.Sprintf("exactlyonce: namespace %q must be non-empty and differ from the consumer's (%q)", namespace, c.Config.Namespace))
	}
	return map[string]*string{
		consumer.EnvTable:        c.Receipts.TableName(),
		consumer.EnvNamespace:    jsii.String(namespace),
		consumer.EnvRetention:    jsii.String(c.Config.ReceiptRetention.String()),
		consumer.EnvSafetyMargin: jsii.String(c.Config.SafetyMargin.String()),
	}
}

// derivedEnvironment lists the consumer variables NewConsumer derives from
// Config and the receipt table; ConsumerProps.Environment may not set them.
func derivedEnvironment() []string {
	return []string{
		consumer.EnvTable, consumer.EnvNamespace, consumer.EnvMode, consumer.EnvUnknownOutcome, consumer.EnvKey,
		consumer.EnvRetention, consumer.EnvSafetyMargin, consumer.EnvBatchConcurrency, consumer.EnvMaxReceiveCount,
		consumer.EnvVisibilityTimeout,
	}
}

// TableEncryption is the encryption of a table: AWS-owned without a key
// (DynamoDB's default), else the customer-managed key. Use it for the
// effect's tables so they follow the consumer's choice.
func TableEncryption(key awskms.IKey) awsdynamodb.TableEncryption {
	if key == nil {
		return ""
	}
	return awsdynamodb.TableEncryption_CUSTOMER_MANAGED
}

// PointInTimeRecovery turns on point-in-time recovery (cdk-nag DDB3).
func PointInTimeRecovery() *awsdynamodb.PointInTimeRecoverySpecification {
	return &awsdynamodb.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: jsii.Bool(true)}
}

func overlap[V any](env map[string]V, names []string) []string {
	var found []string
	for _, n := range names {
		if _, ok := env[n]; ok {
			found = append(found, n)
		}
	}
	slices.Sort(found)
	return found
}
