// Package kit proves that a consumer of sqsidem keeps the promise its
// configuration makes (exactly once, at least once, at most once), end to
// end, against the application's own deployed stack: the construct
// (infra/exactlyonce), the runtime (pkg/idem/consumer) and the team's
// effect, through the real queue, event source mapping and function.
//
// A team describes its application with an [App] — the stack, the
// consumer's construct id, how to build a valid message for a key, and a
// probe that counts how often each key's effect took place — and calls
// [Run] from a test of its own:
//
//	func TestBookings(t *testing.T) { kit.Run(t, app) }
//
// Run finds the consumer by the stack's outputs (the construct's id, then
// consumer.Output*), reads what it promises from the deployed function
// itself — the line its runtime logs at init (consumer.LogReady: mode,
// unknown-outcome policy, whether the effect reconciles, the guarantee),
// after one invocation with an empty SQS event, cross-checked against its
// environment — sends every scenario's messages (subtest send: the
// scenarios overlap, whatever -test.parallel is), waits for the queue to
// drain (drain), and checks each scenario in a subtest of its name. None
// depends on what the effect is, and each key is judged by the promise:
// exactly once (transactional, or lease mode with a Reconcile); at least
// once, twice only with a re-run counted for the key, never three times,
// never dead-lettered (retry, no Reconcile); at most once, every key not
// applied held, its messages in the dead-letter queue, then settled by
// the kit playing the operator and applied exactly once (hold, no
// Reconcile). A key that breaks it fails with a message naming the
// promise.
//
//   - duplicates: each key twice in one SendMessageBatch, then again in a
//     later batch, after its effect took place.
//   - senders: copies of each key sent by several senders released at the
//     same moment.
//   - mismatch: a key's first payload, applied, then the same key with
//     another payload: the copy ends in the dead-letter queue.
//   - keyless: messages without the stack's key (its output Key): to the
//     dead-letter queue, never applied. Skipped when the stack outputs no
//     key (the effect keys records its own way).
//   - malformed: App.Malformed, a message with a key that the effect
//     refuses: to the dead-letter queue, never applied. Skipped when nil.
//   - poison: a valid message asking for consumer.FaultPoison: to the
//     dead-letter queue, never applied.
//   - partner refuses once, refuses always, fails once, loses the reply
//     (ignoring or honouring the key), answers late: the kit's stub failing
//     as a remote system does, for an effect that calls it (the probe is
//     StubApplied): a refusal must be definite; the rest is judged by the
//     promise. Skipped for another probe.
//   - crash before effect, crash after effect: a valid message asking for
//     a crash on its first receive, before the effect or after it (before
//     its receipt or commit), sent alone once the others have drained
//     (subtest send alone), the crash in the function's log.
//   - dead-letter queue: every message above that must be there is (a held
//     key's too), and no other of the run's. One there more often than
//     sent is SQS's doing, not the consumer's (a send stored twice, as an
//     SDK retry of a batch whose reply was lost makes): logged, not failed.
//   - held keys settled: each held key's record read from the receipt
//     table, resolved done or not done by the probe, its messages sent
//     back to the queue, then applied exactly once. Skipped when none was
//     held.
//   - metrics: the runtime's EMF lines in the function's log group count
//     every message of the run as the promise allows (Reconciled with a
//     Reconcile, Rerun under retry as often as its log lines, Held under
//     hold), carry the namespace and dimensions the deployed dashboard and
//     alarms read, and the stack's dashboards and alarms graph and watch
//     this consumer, with metrics the lines carry. In a stack of several
//     consumers each Run considers what names its own.
//
// Every wait ends on an event (the probe's counts, the queue drained, a
// message seen in the dead-letter queue, the metric lines), bounded by a
// deadline derived from the queue's redrive policy (App.Timeout overrides
// it); none is a sleep that "should suffice". Each message the kit sends
// carries the message attribute [AttributeRun], so that runs against one
// stack do not count each other's messages.
//
// The poison and crash scenarios are skipped unless the function's
// environment has FAULT_FROM_MESSAGE=true (the construct's LocalStack
// preset, with the consumer built with the fault switches); the crashes
// also need a maxReceiveCount of at least 2.
//
// After the stack is destroyed, [NothingLeft] (or [Leftovers]) checks that
// its resources went with it (Run records them, see [EnvRecord]).
//
// The command onlocalstack (cmd/onlocalstack; go tool onlocalstack) is
// the local loop around a test that calls Run: LocalStack, the synth with
// the construct's LocalStack preset, deploy, the test, destroy, nothing
// left. For an effect that calls a partner, [StartStub] is a partner on
// 127.0.0.1 that counts each call per key and fails as [StubPlan] says
// ([SetStubPlan]), and [StubApplied] its probe.
//
// The clients are the AWS SDK's defaults: AWS_ENDPOINT_URL points them at
// LocalStack; with it set and no credentials in the environment, the kit
// uses LocalStack's dummy ones in us-east-1.
package kit
