package kit

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// LambdaAPI is what the kit asks of Lambda: the consumer function's
// configuration, whose environment says whether it honours the fault a
// message asks for (consumer.EnvFaultFromMessage).
type LambdaAPI interface {
	GetFunctionConfiguration(context.Context, *lambda.GetFunctionConfigurationInput, ...func(*lambda.Options)) (*lambda.GetFunctionConfigurationOutput, error)
}

var _ LambdaAPI = (*lambda.Client)(nil)

// NoFaultSwitch is why the fault scenarios (poison, crash before effect,
// crash after effect) are skipped for a function without
// consumer.EnvFaultFromMessage=true: its build ignores the attribute
// consumer.FaultAttribute, or may.
const NoFaultSwitch = "the consumer is not built with the fault switches (" + consumer.EnvFaultFromMessage + "): deploy it with onlocalstack"

// crashScenarios is how many scenarios crash the function: each costs
// about one visibility timeout before its message is delivered again.
const crashScenarios = 2

// faultPlan is what the deployed function's environment says of the fault
// scenarios, read once per run.
type faultPlan struct {
	poison string // why the poison scenario is skipped; "" runs it
	crash  string // why the crash scenarios are skipped; "" runs them
	// The function's IDEM_MODE and IDEM_UNKNOWN_OUTCOME (the runtime's
	// defaults when unset): what the attempt after a crash does.
	mode, unknown string
}

// planFaults reads the function's environment env (err: it could not be
// read): the fault scenarios run when consumer.EnvFaultFromMessage is
// "true"; the crash scenarios also need a second receive
// (maxReceives >= 2), since a crashed receive counts.
func planFaults(env map[string]string, err error, maxReceives int) faultPlan {
	p := faultPlan{mode: env[consumer.EnvMode], unknown: env[consumer.EnvUnknownOutcome]}
	if p.mode == "" {
		p.mode = consumer.DefaultMode
	}
	if p.unknown == "" {
		p.unknown = consumer.DefaultUnknownOutcome
	}
	switch {
	case err != nil:
		p.poison = fmt.Sprintf("the consumer's configuration cannot be read (%v): the fault switches are unknown", err)
	case env[consumer.EnvFaultFromMessage] != "true":
		p.poison = NoFaultSwitch
	}
	p.crash = p.poison
	if p.crash == "" && maxReceives < 2 {
		p.crash = fmt.Sprintf("the queue's maxReceiveCount is %d: a crashed first receive would send the message to the dead-letter queue", maxReceives)
	}
	return p
}

// crashTime is what the crash scenarios add to the run's bound: one
// visibility timeout each, before the crashed message comes back.
func (p faultPlan) crashTime(rd redrive) time.Duration {
	if p.crash != "" {
		return 0
	}
	return crashScenarios * rd.visibility
}

// reconcilable reports whether the attempt after a crash past the effect
// may count Reconciled: in lease mode, when the effect's Reconcile says
// the effect took place. Transactional mode never reconciles.
func (p faultPlan) reconcilable(point string) bool {
	return point == consumer.FaultCrashAfter && p.mode == consumer.ModeLease
}

// holds reports whether the attempt after a crash may hold its key: lease
// mode with IDEM_UNKNOWN_OUTCOME=hold, when the effect has no Reconcile
// (or it cannot tell).
func (p faultPlan) holds() bool {
	return p.mode == consumer.ModeLease && p.unknown == consumer.UnknownHold
}

// crashHint explains a crashed key not applied once: what the attempt
// after a crash does in the function's mode.
func (p faultPlan) crashHint() string {
	if p.mode != consumer.ModeLease {
		return ""
	}
	then := "runs the effect again: twice if the crash came after it (the documented window)"
	if p.holds() {
		then = "holds the key for an operator: its message ends in the dead-letter queue"
	}
	return fmt.Sprintf(" (lease mode: the attempt after a crash takes over an unknown outcome; Effect.Reconcile settles it, and without one %s=%s %s)",
		consumer.EnvUnknownOutcome, p.unknown, then)
}

// functionEnv is the environment of the deployed function.
func functionEnv(ctx context.Context, c LambdaAPI, function string) (map[string]string, error) {
	out, err := c.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(function)})
	if err != nil {
		return nil, fmt.Errorf("kit: function %s: %w", function, err)
	}
	if out.Environment == nil {
		return map[string]string{}, nil
	}
	if e := out.Environment.Error; e != nil {
		return nil, fmt.Errorf("kit: function %s: its environment: %s: %s", function, aws.ToString(e.ErrorCode), aws.ToString(e.Message))
	}
	return out.Environment.Variables, nil
}
