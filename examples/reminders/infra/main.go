// Command infra is the reminders' CDK app (cdk.json): an exactly-once
// consumer (infra/exactlyonce) that sends each appointment reminder by SMS
// once, through the team's SMS provider.
//
// Context (-c key=value):
//
//	smsUrl       the SMS provider's base URL (required; SMS_URL)
//	tokenSecret  the name of the Secrets Manager secret that holds the
//	             provider's API token (default reminders/sms-token; its ARN
//	             is SMS_TOKEN, the value is read at cold start)
//	profile      default | localstack  (localstack: a 4 s function, 3
//	             receives before the DLQ, the stack RemindersLocal, the code
//	             build/local/consumer)
//	code         the consumer's asset dir (default build/consumer: the arm64 bootstrap)
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/jsii-runtime-go"

	"github.com/exactlyonce/sqsidem/infra/exactlyonce"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"

	"example.com/reminders"
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
	ctx := func(key, def string) string {
		if v, ok := app.Node().TryGetContext(jsii.String(key)).(string); ok && v != "" {
			return v
		}
		return def
	}
	stackName, code := "Reminders", "build/consumer"
	// An example: destroying the stack deletes its data too. A real
	// service keeps the default, RemovalPolicy_RETAIN.
	cfg := exactlyonce.Config{RemovalPolicy: awscdk.RemovalPolicy_DESTROY}
	switch p := ctx("profile", "default"); p {
	case "default":
	case "localstack": // LocalStack runs the bootstrap on this machine, slower than AWS
		stackName, code = "RemindersLocal", "build/local/consumer"
		cfg.FunctionTimeout, cfg.SafetyMargin, cfg.MaxReceiveCount = 4*time.Second, time.Second, 3
	default:
		return fmt.Errorf("unknown profile %q (want default or localstack)", p)
	}
	smsURL := ctx("smsUrl", "")
	if !consumer.IsHTTPURL(smsURL) {
		return fmt.Errorf("-c smsUrl=%q: want the SMS provider's base URL, an absolute http(s) URL", smsURL)
	}
	stack := awscdk.NewStack(app, jsii.String(stackName), nil)
	addReminders(stack, awslambda.Code_FromAsset(jsii.String(ctx("code", code)), nil), cfg, smsURL, ctx("tokenSecret", "reminders/sms-token"))
	app.Synth(nil)
	return nil
}

// addReminders is the team's consumer: the construct, with the provider's
// URL as a plain variable and its token as a secret. cfg brings the
// profile's settings; mode, key and namespace are the consumer's own.
func addReminders(stack awscdk.Stack, code awslambda.Code, cfg exactlyonce.Config, smsURL, tokenSecret string) *exactlyonce.Consumer {
	// The token is put into Secrets Manager outside CDK (a value in the
	// template would be no secret): aws secretsmanager create-secret.
	token := awssecretsmanager.Secret_FromSecretNameV2(stack, jsii.String("SmsToken"), jsii.String(tokenSecret))
	cfg.Mode = consumer.ModeLease // the effect is a Lease with a Reconcile
	cfg.Key = reminders.KeyField  // IDEM_KEY, and the output RemindersKey idemctl reads
	cfg.Namespace = reminders.Namespace
	return exactlyonce.NewConsumer(stack, "Reminders", &exactlyonce.ConsumerProps{
		Code:        code,
		Config:      cfg,
		Environment: map[string]*string{reminders.EnvSMSURL: jsii.String(smsURL)},
		Secrets:     map[string]awssecretsmanager.ISecret{reminders.EnvSMSToken: token}, // its ARN; the role may read it
		Nag:         true,                                                               // cdk-nag's packs on the consumer's resources: a finding fails the synth
	})
}
