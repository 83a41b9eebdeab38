// Package consumer is the runtime of an exactly-once SQS consumer: the
// Lambda half of the CDK construct infra/exactlyonce. A team writes its
// effect; main is one call:
//
//	func main() { consumer.Start(setup) }
//
//	func setup(ctx context.Context, rt *consumer.Runtime) (consumer.Effect, error) {
//		table := rt.Env.Required("PAYMENTS_TABLE")
//		return consumer.Effect{Tx: func(ctx context.Context, key string, msg events.SQSMessage) (idem.TxEffect, error) {
//			return idem.TxEffect{Writes: []any{charge(table, key, msg.Body)}}, nil
//		}}, nil
//	}
//
// The mode is the construct's to say and the effect's to implement. This
// effect is DynamoDB writes (Effect.Tx), so its construct's Config says
// Mode: consumer.ModeTransactional; under the default mode, lease, Start
// stops the instance at init ("IDEM_MODE: lease, but the effect has no
// Lease function"). A lease-mode effect gives Effect.Lease (any side
// effect) and, when it calls a remote system that can be asked,
// Effect.Reconcile. The key is the construct's Config.Key, the message
// attribute, else the body's field, that names the business effect: the
// construct passes it as IDEM_KEY and outputs it as <id>Key (OutputKey),
// which idemctl reads to sort a dead-letter queue. Prefer it to
// Effect.Key, a key function of the effect's own, which the stack cannot
// name for idemctl (it then needs --key-field). ExampleStart
// (transactional: its setup runs in Example_charges) and
// ExampleStart_lease, with infra/exactlyonce's Example and Example_lease,
// are such pairs.
//
// # One configuration story
//
// The construct's Config becomes the function's environment (the names in
// names.go, which the construct imports), and Start reads it back with
// Load: the receipt store (IDEM_STORE: DynamoDB, or Redis with
// IDEM_REDIS_URL), the namespace, the mode, the key, the Guard's
// retention, safety margin, lease and cache, the batch concurrency, the
// log level. Every missing or wrong variable is named at once, the
// effect's own (read with Runtime.Env) included, and the instance does not
// start: Lambda reports an init error and the messages stay in the queue.
//
// # Secrets
//
// An API token is no environment variable: the construct's
// ConsumerProps.Secrets puts a Secrets Manager secret's ARN in a variable
// and lets the function read that secret, and Setup reads its value once,
// at cold start, with Runtime.Secret (rt.Secret(ctx, "SMS_TOKEN")). A
// secret that cannot be read is a problem of its variable, reported at
// init with the others.
//
// # Modes
//
// IDEM_MODE=lease runs Effect.Lease under a lease: any side effect, at
// most once except for the documented window (a crash between the effect
// and its receipt). IDEM_MODE=transactional commits the writes Effect.Tx
// returns together with the receipt in one DynamoDB transaction: exactly
// once. An effect may implement both; the one the mode names must be set.
//
// # Metrics and logs
//
// Each batch writes one CloudWatch Embedded Metric Format line (namespace
// MetricNamespace, "sqsidem"; dimensions FunctionName and Namespace; one
// count per outcome: Metrics), which the construct's dashboard and alarms
// read, and one "batch done" log line; sqsbatch writes one line per
// record. Logs are slog JSON with the Lambda request id; message bodies are
// logged only for failed records and only with LOG_BODIES=true.
//
// # The queue
//
// The runtime keeps the dead-letter queue for real failures with the SQS
// client (queue.go): a copy that meets its key in progress comes back when
// the holder's lease ends (ChangeMessageVisibility); on its last receive it
// waits for the holder, or is sent to its queue again delayed until the
// holder's lease ends (SendMessage: the construct grants it on the
// consumer's own queue); a record done on its last receive is deleted at
// once (DeleteMessage), so that a batch-mate crashing the invocation does
// not send it to the DLQ. With IDEM_VISIBILITY_TIMEOUT (the queue's
// visibility timeout, which the construct sets), a record that failed on
// the receipt store stays hidden for up to 2^n visibility timeouts after
// its n-th receive (ChangeMessageVisibility; sqsbatch.WithStoreBackoff), so
// that a table that throttles or is slow for minutes delays its messages
// instead of dead-lettering them.
//
// # Fault switches
//
// Built with the tag sqsidem_faults, the runtime wraps the effect in the
// integration suite's fault switches (faultnames.go); without it, as
// deployed, they do not exist. With FAULT_FROM_MESSAGE=true a message asks
// for a fault itself, with its attribute sqsidem.fault (poison, a crash
// before or after the effect): the kit's scenarios (integration/kit) on a
// consumer the construct's LocalStack preset built.
package consumer
