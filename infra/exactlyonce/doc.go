// Package exactlyonce is a CDK construct for an exactly-once SQS consumer in
// Go: NewConsumer adds a queue with a dead-letter queue, a DynamoDB receipt
// table (pkg/idem/dynamostore's schema, TTL, point-in-time recovery), the
// consumer function (provided.al2023, arm64, X-Ray, its own log group and
// role), its event source mapping (ReportBatchItemFailures, maximum
// concurrency), alarms and a dashboard.
//
// One Config is the source of truth for every value resources must agree
// on: the queue's visibility is 6 x the function timeout (AWS guidance for
// SQS event sources), retries must reach the DLQ before the queue drops a
// message, receipts outlive every redelivery, the DLQ keeps messages longer
// than the queue. Config.Validate refuses what would lose messages;
// NewConsumer panics on it, as CDK constructors do.
//
// The construct is one half of a contract whose other half is the runtime,
// pkg/idem/consumer: the function's main is consumer.Start, and every
// name both sides spell (the variables, modes, metrics, dimensions and
// outputs) is a constant of that package, which this one imports; a test
// walks the synthesized template and fails when the two disagree. The
// receipt table, namespace, mode, key, retention, safety margin, batch
// concurrency and maxReceiveCount come from Config; the effect's own
// variables come from ConsumerProps.Environment, and its tables are
// granted by the caller:
//
//	charges := exactlyonce.NewConsumer(stack, "Charges", &exactlyonce.ConsumerProps{
//		Code:        awslambda.Code_FromAsset(jsii.String("build/charges"), nil),
//		Config:      exactlyonce.Config{Key: "paymentId"},
//		Environment: map[string]*string{"PAYMENTS_TABLE": payments.TableName()},
//	})
//	payments.Grant(charges.Function, jsii.String("dynamodb:UpdateItem"))
//
// Outputs: the queue and DLQ URLs, the receipt table, the function, the
// namespace and the key, named by the construct id and consumer's Output*
// suffixes ("ChargesQueueUrl"; the id "Default" adds no prefix).
//
// Grants: the consumer's role may call GetItem and UpdateItem on the
// receipt table, consume the queue, and write its own log group; nothing
// else. GrantSend and GrantReceipts give another function (a producer)
// exactly what sending and keeping its own receipts need.
//
// Encryption: queues use SQS-managed keys and tables AWS-owned keys, unless
// ConsumerProps.Key names a customer-managed key (NewKey makes one with
// rotation and the key policy CloudWatch Logs needs); then the queues, the
// receipt table, the log group and the environment use it, and every grant
// includes the KMS actions the service needs on it.
//
// Alarms (optionally notifying Config.AlarmTopicARN): a message in the DLQ,
// a backlog older than retries explain, a consumer crash or timeout, any
// LeaseLost or Unconfirmed outcome, and store errors in 3 of 5 minutes. The
// dashboard graphs the outcomes the consumer emits (consumer.Metrics),
// the queues and the function.
//
// cdk-nag's AwsSolutions and Serverless packs report nothing on these
// resources; each suppression carries its reason.
package exactlyonce
