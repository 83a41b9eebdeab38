//lint:file-ignore SA1019 assertions.Annotations returns cxapi.SynthesisMessage, deprecated in favour of a type the Go bindings do not offer.

package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/exactlyonce/sqsidem/infra/exactlyonce"
	"github.com/exactlyonce/sqsidem/infra/exactlyonce/cdktest"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"

	"example.com/reminders"
)

func TestMain(m *testing.M) { cdktest.Main(m) }

// TestStack: the function finds the provider's URL in SMS_URL and the
// token's secret ARN (never its value) in SMS_TOKEN, may read that secret,
// keys by reminderId (IDEM_KEY and the output idemctl reads), and cdk-nag
// finds nothing in the consumer.
func TestStack(t *testing.T) {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("Reminders"), nil)
	addReminders(stack, cdktest.Code(), exactlyonce.Config{}, "https://sms.example/v1", "reminders/sms-token")
	tpl := cdktest.Synth(t, stack)

	env := cdktest.Env(tpl.One(t, "AWS::Lambda::Function", "RemindersConsumer"))
	for name, want := range map[string]string{
		reminders.EnvSMSURL: "https://sms.example/v1", consumer.EnvKey: reminders.KeyField,
		consumer.EnvMode: consumer.ModeLease, consumer.EnvNamespace: reminders.Namespace,
	} {
		if env[name] != want {
			t.Errorf("%s = %v, want %q", name, env[name], want)
		}
	}
	if arn := cdktest.JSON(env[reminders.EnvSMSToken]); !strings.Contains(arn, `":secretsmanager:"`) || !strings.Contains(arn, `":secret:reminders/sms-token"`) {
		t.Errorf("%s = %s, want the secret's ARN", reminders.EnvSMSToken, arn)
	}
	cdktest.Check(t, "the secret's grant", func() {
		tpl.HasResourceProperties(jsii.String("AWS::IAM::Policy"), map[string]any{
			"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{map[string]any{
				"Action":   []any{"secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"},
				"Effect":   "Allow",
				"Resource": map[string]any{"Fn::Join": []any{"", assertions.Match_ArrayWith(&[]any{assertions.Match_StringLikeRegexp(jsii.String(":secret:reminders/sms-token-\\?{6}$"))})}},
			}})},
			"Roles": []any{map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^RemindersRoleConsumer"))}},
		})
	})
	cdktest.Check(t, "the key's output", func() {
		tpl.HasOutput(jsii.String("Reminders"+consumer.OutputKey), map[string]any{"Value": reminders.KeyField})
	})

	ann := assertions.Annotations_FromStack(stack)
	for _, pack := range []string{"AwsSolutions-.*", "Serverless-.*"} {
		match := assertions.Match_StringLikeRegexp(jsii.String(pack))
		for _, m := range append(*ann.FindError(jsii.String("*"), match), *ann.FindWarning(jsii.String("*"), match)...) {
			t.Errorf("cdk-nag: %s at %s", fmt.Sprint(m.Entry.Data), *m.Id)
		}
	}
}
