package consumer

import "strconv"

// The fault switches of the integration suite: a wrapper around the
// Effect, compiled only into a build with the tag sqsidem_faults (the
// suite's host binaries, and a team's consumer deployed on LocalStack for
// the kit's crash and poison scenarios: go build -tags
// lambda.norpc,sqsidem_faults). A build without it (what is deployed to
// AWS) ignores these variables, so a team keeps them at no cost and
// deletes nothing. The names are compiled into every build, for the kit.
const (
	// EnvFaultHookURL is POSTed ?point=FaultBeforeEffect&key=… before the
	// effect and ?point=FaultAfterEffect&key=… after it succeeded, before
	// the receipt is written; the harness may SIGKILL or SIGSTOP the
	// process instead of answering.
	EnvFaultHookURL = "FAULT_HOOK_URL"
	// FaultHookRequestID is the query parameter of a fault hook call that
	// holds the request id of the invocation calling: with several
	// invocations in one process (AWS_LAMBDA_MAX_CONCURRENCY), it tells
	// the harness which one is at the point.
	FaultHookRequestID = "request_id"
	// EnvFaultFailKeys (comma-separated keys) fail the effect on their
	// first EnvFaultFailTimes attempts (default 1).
	EnvFaultFailKeys  = "FAULT_EFFECT_FAIL_KEYS"
	EnvFaultFailTimes = "FAULT_EFFECT_FAIL_TIMES"
	// EnvFaultPoisonKeys (comma-separated keys) fail the effect every
	// time: messages that can only end in the dead-letter queue.
	EnvFaultPoisonKeys = "FAULT_POISON_KEYS"
	// EnvFaultNoReconcile (true) drops the effect's Reconcile: an unknown
	// outcome goes straight to the policy (IDEM_UNKNOWN_OUTCOME), to
	// measure what reconciling saves.
	EnvFaultNoReconcile = "FAULT_NO_RECONCILE"
	// EnvFaultFromMessage (true or false, default false) lets each message
	// ask for a fault itself, with the string message attribute
	// FaultAttribute: for a test that cannot know the keys when the
	// function is deployed (the kit, integration/kit, against a team's
	// consumer on LocalStack).
	EnvFaultFromMessage = "FAULT_FROM_MESSAGE"
)

// The points at which the fault hook is called.
const (
	FaultBeforeEffect = "before-effect"
	FaultAfterEffect  = "after-effect"
)

// The faults a message asks for with EnvFaultFromMessage=true: the string
// message attribute FaultAttribute and its values. A value that is none of
// these is ignored (and logged).
const (
	FaultAttribute = "sqsidem.fault"
	// FaultPoison fails the effect on every receive, before it runs, with
	// a definite failure (idem.Definite, wrapping ErrInjected): the
	// message ends in the dead-letter queue, never applied.
	FaultPoison = "poison"
	// FaultCrashBefore ends the process abruptly, as SIGKILL would (no
	// receipt written, no deferred code, nothing flushed: one line,
	// FaultCrashLine, on stderr, then os.Exit(FaultExitCode)), on the
	// message's first receive, before the effect. Its first receive is an
	// ApproximateReceiveCount of 1 (without one: the first in this
	// process); on later receives nothing happens.
	FaultCrashBefore = "crash-before-effect"
	// FaultCrashAfter is FaultCrashBefore after the effect succeeded and
	// before its receipt is written (transactional mode: before its writes
	// are committed), where FaultAfterEffect is hooked.
	FaultCrashAfter = "crash-after-effect"
)

// FaultExitCode is the exit status of FaultCrashBefore and FaultCrashAfter.
const FaultExitCode = 86

// FaultCrashLine is the line a crash at point (FaultCrashBefore,
// FaultCrashAfter) writes to stderr before it exits: the point and the
// key, quoted, so that a test finds it in the function's log. It names the
// key, which no other line does: only a build with the tag writes it.
func FaultCrashLine(point, key string) string {
	return FaultAttribute + ": " + point + ": key " + strconv.Quote(key)
}
