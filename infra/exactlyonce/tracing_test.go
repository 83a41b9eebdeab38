//lint:file-ignore SA1019 assertions.Annotations returns cxapi.SynthesisMessage, deprecated in favour of a type the Go bindings do not offer.

package exactlyonce_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/exactlyonce/sqsidem/infra/exactlyonce"
	"github.com/exactlyonce/sqsidem/infra/exactlyonce/cdktest"
)

// TestTracing: Config.Tracing sets the consumer's TracingConfig (Active by
// default, as before it was an option); Disabled leaves out TracingConfig,
// the X-Ray permissions and the cdk-nag suppression that covers them.
func TestTracing(t *testing.T) {
	for name, tt := range map[string]struct {
		tracing awslambda.Tracing
		mode    string // "" means no TracingConfig
	}{
		"default":      {"", "Active"},
		"active":       {awslambda.Tracing_ACTIVE, "Active"},
		"pass-through": {awslambda.Tracing_PASS_THROUGH, "PassThrough"},
		"disabled":     {awslambda.Tracing_DISABLED, ""},
	} {
		t.Run(name, func(t *testing.T) {
			c, tpl := synthConsumer(t, exactlyonce.ConsumerProps{Config: exactlyonce.Config{Tracing: tt.tracing}})
			if want := tt.tracing; want != "" && c.Config.Tracing != want || want == "" && c.Config.Tracing != awslambda.Tracing_ACTIVE {
				t.Errorf("Consumer.Config.Tracing = %q", c.Config.Tracing)
			}
			fn := tpl.One(t, "AWS::Lambda::Function", "OrdersConsumer")
			var tracingConfig any = assertions.Match_Absent()
			if tt.mode != "" {
				tracingConfig = map[string]any{"Mode": tt.mode}
			}
			cdktest.Check(t, "TracingConfig", func() {
				tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{"TracingConfig": tracingConfig})
			})
			if got, ok := fn["TracingConfig"]; ok != (tt.mode != "") {
				t.Errorf("TracingConfig = %v, want mode %q", got, tt.mode)
			}

			xray := false
			for actions, resources := range policyStatements(tpl, "OrdersRoleConsumer") {
				if strings.Contains(actions, "xray:") {
					xray = true
					if actions != "xray:PutTraceSegments,xray:PutTelemetryRecords" || resources != `"*"` {
						t.Errorf("X-Ray statement %s on %s", actions, resources)
					}
				}
			}
			if xray != (tt.mode != "") {
				t.Errorf("X-Ray permissions on the role: %v, want them only with tracing (mode %q)", xray, tt.mode)
			}
			if got := suppressions(tpl)["AwsSolutions-IAM5"]; got != (tt.mode != "") {
				t.Errorf("AwsSolutions-IAM5 suppressed: %v; want it exactly when the role has X-Ray's Resource '*' (mode %q)", got, tt.mode)
			}
		})
	}
}

// suppressions: the cdk-nag rules suppressed anywhere in the template.
func suppressions(tpl cdktest.Template) map[string]bool {
	out := map[string]bool{}
	for _, r := range tpl.Resources {
		nag, _ := r.Metadata["cdk_nag"].(map[string]any)
		rules, _ := nag["rules_to_suppress"].([]any)
		for _, rule := range rules {
			out[fmt.Sprint(rule.(map[string]any)["id"])] = true
		}
	}
	return out
}

// TestTracingNag: with the AwsSolutions and Serverless packs, a consumer
// reports nothing with active tracing; otherwise only Serverless's
// LambdaTracing (the choice the Config made, for the team to suppress
// with its reason), and with tracing disabled no wildcard (IAM5) appears
// for want of the X-Ray suppression.
func TestTracingNag(t *testing.T) {
	for _, tracing := range []awslambda.Tracing{awslambda.Tracing_ACTIVE, awslambda.Tracing_PASS_THROUGH, awslambda.Tracing_DISABLED} {
		t.Run(string(tracing), func(t *testing.T) {
			stack := newStack()
			exactlyonce.NewConsumer(stack, "Orders", &exactlyonce.ConsumerProps{Code: cdktest.Code(), Config: exactlyonce.Config{Tracing: tracing}})
			awscdk.Aspects_Of(stack).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
			awscdk.Aspects_Of(stack).Add(cdknag.NewServerlessChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
			ann := assertions.Annotations_FromStack(stack)
			var found []string
			for _, pack := range []string{"AwsSolutions-.*", "Serverless-.*"} {
				match := assertions.Match_StringLikeRegexp(jsii.String(pack))
				for _, m := range append(*ann.FindError(jsii.String("*"), match), *ann.FindWarning(jsii.String("*"), match)...) {
					rule, _, _ := strings.Cut(fmt.Sprint(m.Entry.Data), ":")
					found = append(found, rule+" at "+*m.Id)
				}
			}
			var want []string
			if tracing != awslambda.Tracing_ACTIVE {
				want = []string{"Serverless-LambdaTracing at /Test/Orders/Consumer/Resource"}
			}
			if !slices.Equal(found, want) {
				t.Errorf("cdk-nag findings = %q, want %q", found, want)
			}
		})
	}
}

// TestTracingInvalid: a mode Lambda does not know is refused, by
// NewConsumer with the rest of Config, and by NewFunction.
func TestTracingInvalid(t *testing.T) {
	msg := cdktest.Panics(func() {
		exactlyonce.NewConsumer(newStack(), "Orders", &exactlyonce.ConsumerProps{Code: cdktest.Code(), Config: exactlyonce.Config{Tracing: "Active"}})
	})
	if !strings.Contains(msg, `Tracing must be one of [ACTIVE PASS_THROUGH DISABLED], got "Active"`) {
		t.Errorf("NewConsumer: panic = %q", msg)
	}
	msg = cdktest.Panics(func() {
		exactlyonce.NewFunction(newStack(), "Producer", &exactlyonce.FunctionProps{
			Code: cdktest.Code(), Timeout: time.Minute, MemoryMB: 128, Tracing: "ON",
		})
	})
	if !strings.Contains(msg, `function "Producer": Tracing must be one of`) {
		t.Errorf("NewFunction: panic = %q", msg)
	}
}

// TestFunctionTracing: NewFunction traces actively unless told otherwise,
// as it did before FunctionProps.Tracing.
func TestFunctionTracing(t *testing.T) {
	stack := newStack()
	for id, tracing := range map[string]awslambda.Tracing{"Traced": "", "Untraced": awslambda.Tracing_DISABLED} {
		exactlyonce.NewFunction(stack, id, &exactlyonce.FunctionProps{
			Code: cdktest.Code(), Timeout: time.Minute, MemoryMB: 128, Tracing: tracing,
			LogRetention: exactlyonce.DefaultConfig().LogRetention, RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
		})
	}
	tpl := cdktest.Synth(t, stack)
	if got := cdktest.JSON(tpl.One(t, "AWS::Lambda::Function", "Traced")["TracingConfig"]); got != `{"Mode":"Active"}` {
		t.Errorf("default TracingConfig = %s, want Active", got)
	}
	if got, ok := tpl.One(t, "AWS::Lambda::Function", "Untraced")["TracingConfig"]; ok {
		t.Errorf("disabled: TracingConfig = %v, want none", got)
	}
}
