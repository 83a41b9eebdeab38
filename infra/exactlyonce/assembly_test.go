package exactlyonce_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/exactlyonce/sqsidem/infra/exactlyonce"
	"github.com/exactlyonce/sqsidem/infra/exactlyonce/cdktest"
)

// EnvScalingOut names a directory where TestScalingAssemblies leaves its
// cloud assemblies, cdk.<option>.out, for the CloudFormation checkers:
//
//	SQSIDEM_SCALING_OUT=$PWD/.cache/scaling go test -run TestScalingAssemblies ./infra/exactlyonce
//	bash integration/scripts/cfn-checks.sh .cache/scaling/cdk.*.out
//
// Unset, they go to a temporary directory and are only checked to exist.
const EnvScalingOut = "SQSIDEM_SCALING_OUT"

// TestScalingAssemblies synthesizes, as `cdk synth` would, a stack with
// each way past one Lambda default: provisioned pollers, Managed Instances
// on a capacity provider the construct creates (in a VPC of the stack), and
// both on an existing capacity provider.
func TestScalingAssemblies(t *testing.T) {
	out := os.Getenv(EnvScalingOut)
	if out == "" {
		out = t.TempDir()
	}
	for name, props := range map[string]func(awscdk.Stack) exactlyonce.ConsumerProps{
		"pollers": func(awscdk.Stack) exactlyonce.ConsumerProps {
			return exactlyonce.ConsumerProps{Config: exactlyonce.Config{MinPollers: 10, MaxPollers: 100}}
		},
		"instances": func(stack awscdk.Stack) exactlyonce.ConsumerProps {
			subnets, groups := network(stack)
			return exactlyonce.ConsumerProps{
				Config:    exactlyonce.Config{MemoryMB: 4096, ManagedInstances: exactlyonce.ManagedInstances{Concurrency: 8, MaxEnvironments: 10}},
				Instances: &exactlyonce.Instances{Subnets: subnets, SecurityGroups: groups, MaxVCPUs: 48},
			}
		},
		"instances-existing-pollers": func(stack awscdk.Stack) exactlyonce.ConsumerProps {
			return exactlyonce.ConsumerProps{
				Config: exactlyonce.Config{MaxPollers: 20, ManagedInstances: exactlyonce.ManagedInstances{Concurrency: 16, MemoryGiBPerVCPU: 4}},
				Instances: &exactlyonce.Instances{CapacityProvider: awslambda.CapacityProvider_FromCapacityProviderArn(
					stack, jsii.String("Shared"), jsii.String(sharedProviderARN))},
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(out, "cdk."+name+".out")
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			// The path metadata `cdk synth` writes, by which cfn-lint
			// knows a CDK template (and skips the rules CDK cannot follow).
			app := awscdk.NewApp(&awscdk.AppProps{
				Outdir:  jsii.String(dir),
				Context: &map[string]any{"aws:cdk:enable-path-metadata": true},
			})
			stack := awscdk.NewStack(app, jsii.String("Scaling"), nil)
			p := props(stack)
			p.Code, p.Nag = cdktest.Code(), true
			exactlyonce.NewConsumer(stack, "Orders", &p)
			app.Synth(nil)
			for _, f := range []string{"manifest.json", "Scaling.template.json"} {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Errorf("the assembly lacks %s: %v", f, err)
				}
			}
		})
	}
}
