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
//
// The construct builds the consumer (./consumer) when the app synthesizes:
// for Lambda's arm64, or, under `go tool onlocalstack`, for this machine
// with LocalStack's preset.
package main

import (
	"fmt"
	"os"

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
	// An example: destroying the stack deletes its data too. A real
	// service keeps the default, RemovalPolicy_RETAIN.
	cfg := exactlyonce.Config{RemovalPolicy: awscdk.RemovalPolicy_DESTROY}
	smsURL := ctx("smsUrl", "")
	if !consumer.IsHTTPURL(smsURL) {
		return fmt.Errorf("-c smsUrl=%q: want the SMS provider's base URL, an absolute http(s) URL", smsURL)
	}
	stack := awscdk.NewStack(app, jsii.String("Reminders"), nil)
	addReminders(stack, nil, cfg, smsURL, ctx("tokenSecret", "reminders/sms-token"))
	app.Synth(nil)
	return nil
}

// addReminders is the team's consumer: the construct, with the provider's
// URL as a plain variable and its token as a secret. cfg brings the
// app's settings; mode, key and namespace are the consumer's own.
func addReminders(stack awscdk.Stack, code awslambda.Code, cfg exactlyonce.Config, smsURL, tokenSecret string) *exactlyonce.Consumer {
	// The token is put into Secrets Manager outside CDK (a value in the
	// template would be no secret): aws secretsmanager create-secret.
	token := awssecretsmanager.Secret_FromSecretNameV2(stack, jsii.String("SmsToken"), jsii.String(tokenSecret))
	cfg.Mode = consumer.ModeLease // the effect is a Lease with a Reconcile
	cfg.Key = reminders.KeyField  // IDEM_KEY, and the output RemindersKey idemctl reads
	cfg.Namespace = reminders.Namespace
	return exactlyonce.NewConsumer(stack, "Reminders", &exactlyonce.ConsumerProps{
		Code:        code,         // nil: Main, built when the app synthesizes
		Main:        "./consumer", // the package, relative to cdk.json
		Config:      cfg,
		Environment: map[string]*string{reminders.EnvSMSURL: jsii.String(smsURL)},
		Secrets:     map[string]awssecretsmanager.ISecret{reminders.EnvSMSToken: token}, // its ARN; the role may read it
		Nag:         true,                                                               // cdk-nag's packs on the consumer's resources: a finding fails the synth
	})
}
