package consumer

// The fault switches of the integration suite: a wrapper around the
// Effect, compiled only into a build with the tag sqsidem_faults (the
// suite's host binaries: go build -tags lambda.norpc,sqsidem_faults). A
// build without it (what is deployed) ignores these variables, so a team
// keeps them at no cost and deletes nothing.
const (
	// EnvFaultHookURL is POSTed ?point=FaultBeforeEffect&key=… before the
	// effect and ?point=FaultAfterEffect&key=… after it succeeded, before
	// the receipt is written; the harness may SIGKILL or SIGSTOP the
	// process instead of answering.
	EnvFaultHookURL = "FAULT_HOOK_URL"
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
)

// The points at which the fault hook is called.
const (
	FaultBeforeEffect = "before-effect"
	FaultAfterEffect  = "after-effect"
)
