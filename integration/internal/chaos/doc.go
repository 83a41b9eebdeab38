// Package chaos throws everything at one running copy of the stack at
// once, at volume, and accounts for every key at the end: applied exactly
// once (the effect's probe says), or in the DLQ with its reason and class
// (poison, malformed, store failure or other: how two runs compare, with
// and without the consumers' store backoff); every double effect named
// with the kill, freeze, lost or late reply or missing receipt that caused
// it. integration/cmd/chaos (`make chaos`) runs it in both modes — lease
// mode once per unknown-outcome policy (reconcile, hold, retry: see
// Policies) — and writes the runs side by side in the report and chart.
//
// # What runs
//
// The stack comes from the synthesized test-profile template (package
// system): the real consumer and producer binaries under the Runtime API
// harness (lambdarun), DynamoDB behind a fault proxy. Run adds its own
// pieces around it:
//
//   - an event source mapping (esm.Poller) whose invocations all go
//     through an Invoker, which dooms a share of them (see Invoker);
//   - eight more consumer instances for the same-moment deliveries, two
//     short-lease instances for zombies, and producer instances;
//   - a Publisher: the producer Lambda publishes the probe's messages in chunks,
//     re-run when a run fails or times out; re-triggered runs and raw
//     copies make the duplicates; poison and malformed messages go out in
//     the first tenth, so that their receives end before the bulk does;
//   - Dynamo, the fault mix on the Lambdas' DynamoDB traffic, and an
//     Outage when asked for: a stretch during which every request of the
//     consumers is throttled, a store slow for longer than their retries;
//   - in lease mode, PartnerChaos, the faults of the partner the effect
//     calls (the suite's stand-in, which counts every call it applies,
//     repeats included): calls refused before anything took place, applied
//     with their reply cut, applied and answered after the caller's
//     deadline, and one outage longer than the lease, during which every
//     call and lookup is refused;
//   - a Timeline (one sample a second) for the progress lines and the chart.
//
// # Policies
//
// A lease-mode run has one unknown-outcome policy (Config.Policy):
// reconcile (the template: the attempt that takes over an unknown outcome
// asks the partner first), hold (the key is parked, its copies go to the
// DLQ; after the drain the run resolves each held key with idemctl from
// the partner's answer, as the runbook says, sends each not-done one once
// more and checks it is applied exactly once) and retry (run again without
// asking: the window open). Reconcile and hold must make no double effect;
// retry's must each be explained.
//
// # Concurrency
//
// The deployed mapping allows 5 concurrent batches (MaximumConcurrency).
// Run takes the number as a setting, 16 by default in the command: under
// this mix most of an invocation's time is spent asleep — the SDK backs
// off up to 2 s after a throttle or a 5xx, and a failed batch waits out
// the 12 s visibility timeout — so 5 loops leave the machine idle and
// 100,000 keys would take an hour. More concurrent batches on the same
// queue and table is what a deployment with a higher MaximumConcurrency,
// or two mappings on one queue, does; it changes nothing the guarantees
// depend on (they hold per key, whatever runs beside it), and it makes the
// races harsher, not milder. -pollers 5 runs the stack's own number.
//
// # Several invocations per process
//
// Config.PerProcess runs every consumer process with
// AWS_LAMBDA_MAX_CONCURRENCY=N, as on Lambda Managed Instances: one Guard,
// its cache and owed receipts shared by N invocations at once. The
// mapping's instances are then Consumers/N processes fed up to N batches
// each, the fan-outs' 8 copies share two processes, and the zombies run in
// such processes too. A kill, a freeze or a timeout takes the process and
// every invocation in it; each of the others is an event of its own with
// its batch (EventProcess), so that it explains a double effect of its
// keys as a kill of its own would.
//
// # Attribution
//
// A double effect in lease mode is explained when its key was in the
// batch of a killed, frozen or timed-out invocation, or of one killed with
// its process (any record of such a batch may have been between its
// effect and its receipt), or a consumer logged it Unconfirmed, LeaseLost, or failed with its effect's own write
// cut off at the effect's deadline (EffectTimeout), or the partner applied
// a call of the key and lost its reply or answered it too late, or a
// consumer logged it Rerun (an unknown outcome run again: the retry
// policy's window, counted). Anything else is unexplained and fails the
// run; in transactional mode, and under the reconcile and hold policies,
// every double effect does.
//
// # Reruns
//
// Under retry, a key applied twice must have a rerun counted, unless an
// invocation of its batches was killed, frozen or timed out (the line may
// have died with it). A rerun fails a hold run and a transactional one;
// under reconcile it is allowed only where the partner's outage could have
// left the lookup unanswered (up to a lease before the line).
package chaos
