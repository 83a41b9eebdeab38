// Package exactlyonce is a CDK construct for an exactly-once SQS consumer in
// Go: NewConsumer adds a queue with a dead-letter queue, a DynamoDB receipt
// table (pkg/idem/dynamostore's schema, TTL, point-in-time recovery), the
// consumer function (provided.al2023, arm64, X-Ray tracing, its own log
// group and role), its event source mapping (ReportBatchItemFailures, maximum
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
// receipt table, namespace, mode, unknown-outcome policy, key, retention,
// safety margin, batch concurrency and maxReceiveCount come from Config;
// the effect's own
// variables come from ConsumerProps.Environment, its secrets from
// ConsumerProps.Secrets, and its tables are granted by the caller:
//
//	charges := exactlyonce.NewConsumer(stack, "Charges", &exactlyonce.ConsumerProps{
//		Code: awslambda.Code_FromAsset(jsii.String("build/charges"), nil),
//		Config: exactlyonce.Config{
//			Mode:      consumer.ModeTransactional, // the effect is a Tx
//			Key:       "paymentId",                // IDEM_KEY, and the output ChargesKey
//			Namespace: "charges",
//		},
//		Environment: map[string]*string{"PAYMENTS_TABLE": payments.TableName()},
//	})
//	payments.Grant(charges.Function, jsii.String("dynamodb:UpdateItem"))
//
// Config.Mode must name a mode the function's effect implements, or the
// function stops at init: consumer.ModeTransactional for an effect that is
// DynamoDB writes (consumer.Effect.Tx), consumer.ModeLease, the default,
// for any other (consumer.Effect.Lease). Config.Key is the business key
// (IDEM_KEY): set it rather than a key function in the effect
// (consumer.Effect.Key), since only Config.Key gives the stack the <id>Key
// output idemctl reads. (ConsumerProps.EncryptionKey is the
// customer-managed KMS key, not this.) The examples Example
// (transactional) and Example_lease run: each synthesizes its consumer and
// checks the mode, key and output; their functions are pkg/idem/consumer's
// setup (ExampleStart, run by Example_charges) and ExampleStart_lease.
//
// Outputs: the queue and DLQ URLs, the receipt table, the function, the
// namespace and the key, named by the construct id and consumer's Output*
// suffixes ("ChargesQueueUrl", "ChargesReceiptTableName",
// "ChargesNamespace", "ChargesKey"; the id "Default" adds no prefix).
//
// Grants: the consumer's role may call GetItem and UpdateItem on the
// receipt table, consume the queue and send to it (a copy that meets its key
// in progress on its last receive is sent back, delayed:
// sqsbatch.WithRequeue), and write its own log group; nothing else. GrantSend and GrantReceipts give another function (a producer)
// exactly what sending and keeping its own receipts need.
//
// Encryption: queues use SQS-managed keys and tables AWS-owned keys, unless
// ConsumerProps.EncryptionKey names a customer-managed key (NewKey makes
// one with rotation and the key policy CloudWatch Logs needs); then the
// queues, the receipt table, the log group and the environment use it, and
// every grant includes the KMS actions the service needs on it.
//
// Remote effects: in lease mode, an attempt that takes over an unknown
// outcome (an effect error not marked idem.Definite, a crash, a lapsed
// lease) asks the effect's Reconcile first; when that cannot tell,
// Config.UnknownOutcome decides (IDEM_UNKNOWN_OUTCOME):
// consumer.UnknownRetry (the default) runs the effect again,
// consumer.UnknownHold parks the key HELD until an operator settles it
// with idemctl resolve, its messages failing into the DLQ meanwhile.
// Transactional mode never leaves an unknown outcome: Validate refuses
// UnknownHold there, since it would hold nothing.
//
// Alarms (optionally notifying Config.AlarmTopicARN): a message in the DLQ,
// a backlog older than retries explain, a consumer crash or timeout, any
// LeaseLost or Unconfirmed outcome, store errors in 3 of 5 minutes, any
// Held key (AlarmHeld, created whatever the policy: a key held before a
// switch to retry stays held), and re-runs (AlarmRerun: an unknown outcome
// run again under retry, so the effect may have taken place twice) above
// Config.AlarmRerunThreshold a minute, by default the first.
// Each description starts with the idemctl command to run for this stack
// and consumer ("Run: idemctl redrive --dry-run --stack Shop --consumer
// Charges.") and ends with a link to the alarm's section of the runbook,
// Config.RunbookURL + "#" + the alarm id in lower case
// (".../cmd/idemctl/RUNBOOK.md#alarmdeadletterqueuenotempty"); a team with
// its own runbook sets RunbookURL, and keeps a "## <alarm id>" section for
// every alarm. The dashboard graphs the outcomes the consumer emits
// (consumer.Metrics, in the CloudWatch namespace consumer.MetricNamespace,
// "sqsidem"; what became of unknown outcomes, Reconciled, Rerun and Held,
// in a graph of their own), the queues and the function.
//
// Past one function instance: Config.MinPollers and MaxPollers put the
// event source mapping in provisioned mode (dedicated pollers, each
// invoking up to 10 batches at once; MaxConcurrency must then be 0, as
// the service refuses both), and the dashboard gains a row to size them
// by. Config.ManagedInstances runs the function on Lambda Managed
// Instances, on an existing capacity provider or one the construct creates
// in the given subnets and security groups (ConsumerProps.Instances),
// where one process runs ManagedInstances.Concurrency invocations at once
// (Lambda's AWS_LAMBDA_MAX_CONCURRENCY, which aws-lambda-go reads). In
// both, Validate refuses whatever would cap the function below what the
// mapping invokes (throttled batches reach the DLQ), and the service's
// limits, each error naming the setting; the visibility rule holds
// unchanged.
//
// Tracing: Config.Tracing is the consumer's X-Ray mode,
// awslambda.Tracing_ACTIVE by default; Tracing_PASS_THROUGH traces only
// requests a caller sampled, and Tracing_DISABLED turns X-Ray off, leaving
// the xray:PutTraceSegments and xray:PutTelemetryRecords permissions (and
// their cdk-nag suppression) out of the role. NewFunction takes the same
// choice in FunctionProps.Tracing.
//
// Secrets: ConsumerProps.Secrets names Secrets Manager secrets by
// variable; the variable holds the secret's ARN and the role may read it,
// and the function reads the value at init (pkg/idem/consumer's
// Runtime.Secret), so that a token is never in the template or the
// function's configuration.
//
// cdk-nag's AwsSolutions and Serverless packs report nothing on these
// resources with the default Config; each suppression carries its reason.
// ConsumerProps.Nag applies both packs to the construct's own resources,
// so that a team's app sees any finding at synth without applying them to
// its whole stack. With Tracing other than Active, the Serverless pack's
// LambdaTracing rule reports the function: that is the choice made, and
// suppressing it (with the team's reason) is left to the team.
package exactlyonce
