// Command infra is the CDK app (cdk.json: "go run ./infra").
//
// Context (cdk.json or -c key=value):
//
//	profile          default | test | localstack | hardened  (DefaultConfig / TestConfig /
//	                 LocalStackConfig / HardenedConfig; hardened = default + one
//	                 customer-managed KMS key for queues, tables, log groups and
//	                 environments + reserved concurrency)
//	stackName        default StackName (default, hardened), StackName+"Test" (test),
//	                 StackName+"Local" (localstack)
//	functionTimeout  Go duration, e.g. 45s    (overrides FunctionTimeout)
//	mode             lease | transactional    (overrides Mode; the test and localstack
//	                 profiles' effect settings follow it)
//	unknownOutcome   retry | hold             (overrides UnknownOutcome, the app's: what
//	                 lease mode does with an unknown outcome Reconcile cannot settle;
//	                 hold parks the key for idemctl resolve (AlarmHeld); refused in
//	                 transactional mode, which never leaves one)
//	<setting>        the effect's settings (contract.EffectSettings), e.g.
//	                 effectUrl sets EFFECT_URL on the consumer. One marked Required
//	                 must be given in the modes it may be set in, or the app refuses
//	                 to synthesize; the test and localstack profiles set the suite's
//	                 value (contract.Setting.Suite), if it has one
//	exampleSettings  true: a Required setting not given takes its Example value, to
//	                 synthesize a production profile for its checks (make cfn-checks);
//	                 never for a deployment
//	alarmTopicArn    existing SNS topic every alarm notifies (default: none)
//	consumerCode     asset dir, default build/consumer (localstack: build/local/consumer)
//	producerCode     asset dir, default build/producer (localstack: build/local/producer)
//	nag              true: run the AwsSolutions and Serverless cdk-nag packs
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/exactlyonce/sqsidem/functions/contract"
)

func main() {
	err := run()
	jsii.Close() // stop the node child process before exiting
	if err != nil {
		fmt.Fprintln(os.Stderr, "infra:", err)
		os.Exit(1)
	}
}

func run() error {
	app := awscdk.NewApp(nil)
	ctx := func(key string) string {
		if v := app.Node().TryGetContext(jsii.String(key)); v != nil {
			return fmt.Sprint(v) // -c values are strings, cdk.json may hold bools
		}
		return ""
	}

	cfg, stackName, err := configure(ctx)
	if err != nil {
		return err
	}
	// LocalStack runs the functions on this machine (make build-local).
	var code struct{ consumer, producer string }
	if ctx("profile") == "localstack" {
		code.consumer, code.producer = LocalConsumerCode, LocalProducerCode
	}

	stack := NewStack(app, stackName, &StackProps{
		Config:       cfg,
		ConsumerCode: or(ctx("consumerCode"), code.consumer),
		ProducerCode: or(ctx("producerCode"), code.producer),
	})
	if ctx("nag") == "true" {
		ApplyNag(stack)
	}
	app.Synth(nil)
	return nil
}

// configure is the configuration and stack name the context selects
// (ctx returns "" for a key not given), validated.
func configure(ctx func(string) string) (Config, string, error) {
	name := ctx("profile")
	cfg, stackName, err := profile(name)
	if err != nil {
		return Config{}, "", err
	}
	if v := ctx("stackName"); v != "" {
		stackName = v
	}
	if v := ctx("functionTimeout"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return Config{}, "", fmt.Errorf("context functionTimeout: %w", err)
		}
		cfg.FunctionTimeout = d
	}
	if v := ctx("mode"); v != "" && v != cfg.Mode {
		cfg.Mode, cfg.UnknownOutcome = v, unknownOutcomeIn(v)
		if name == "test" || name == "localstack" {
			// The suite's values are those of a mode: a setting of
			// lease mode only is refused in transactional mode.
			cfg.Effect = suiteEffect(contract.EffectSettings, v)
		}
	}
	if v := ctx("unknownOutcome"); v != "" {
		cfg.UnknownOutcome = v
	}
	for _, s := range contract.EffectSettings {
		if v := ctx(s.Context); v != "" {
			cfg.Effect[s.Env] = v
		}
	}
	if ctx("exampleSettings") == "true" {
		// Only to synthesize a production profile for its checks (make
		// cfn-checks): never deployed with these values.
		for _, s := range contract.EffectSettings {
			if s.Required && s.AllowedIn(cfg.Mode) && cfg.Effect[s.Env] == "" {
				cfg.Effect[s.Env] = s.Example
			}
		}
	}
	cfg.AlarmTopicARN = ctx("alarmTopicArn")
	return cfg, stackName, cfg.Validate()
}

// ApplyNag adds the cdk-nag packs the stack is kept clean against.
func ApplyNag(stack awscdk.Stack) {
	awscdk.Aspects_Of(stack).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	awscdk.Aspects_Of(stack).Add(cdknag.NewServerlessChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
}

// or returns v, or def when v is empty.
func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
