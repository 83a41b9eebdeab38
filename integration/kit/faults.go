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
// message asks for (consumer.EnvFaultFromMessage) and cross-checks its
// init line, and one invocation with an empty event, for that line
// (ready.go).
type LambdaAPI interface {
	GetFunctionConfiguration(context.Context, *lambda.GetFunctionConfigurationInput, ...func(*lambda.Options)) (*lambda.GetFunctionConfigurationOutput, error)
	Invoke(context.Context, *lambda.InvokeInput, ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
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
}

// planFaults reads the function's environment env: the fault scenarios
// run when consumer.EnvFaultFromMessage is "true"; the crash scenarios
// also need a second receive (maxReceives >= 2), since a crashed receive
// counts.
func planFaults(env map[string]string, maxReceives int) faultPlan {
	var p faultPlan
	if env[consumer.EnvFaultFromMessage] != "true" {
		p.poison = NoFaultSwitch
	}
	p.crash = p.poison
	if p.crash == "" && maxReceives < 2 {
		p.crash = fmt.Sprintf("the queue's maxReceiveCount is %d: a crashed first receive would send the message to the dead-letter queue", maxReceives)
	}
	return p
}

// crashTime is what the crash scenarios add to the run's bound: each
// crashed message comes back after a visibility timeout, and one the
// attempt after does not settle — held (at most once), or failed by a
// consumer that breaks its promise — reaches the dead-letter queue after
// the receives left. A bound is a deadline, not a wait: a consumer that
// settles its crashes at once costs one visibility timeout each, and one
// that does not is judged, by its promise, rather than timed out.
func (p faultPlan) crashTime(rd redrive) time.Duration {
	if p.crash != "" {
		return 0
	}
	return crashScenarios * time.Duration(rd.maxReceives) * rd.visibility
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
