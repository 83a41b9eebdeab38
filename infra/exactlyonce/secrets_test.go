package exactlyonce_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/jsii-runtime-go"

	"github.com/exactlyonce/sqsidem/infra/exactlyonce"
	"github.com/exactlyonce/sqsidem/infra/exactlyonce/cdktest"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// A lease-mode consumer that calls an SMS provider: the provider's URL is
// a plain variable, its API token a secret, put into Secrets Manager
// outside CDK (a value in the template would be no secret). The function
// gets the secret's ARN in SMS_TOKEN, may read that secret, and reads the
// value at cold start (pkg/idem/consumer's ExampleRuntime_Secret). Nag
// runs cdk-nag's packs on the consumer's resources: a finding would fail
// the synth. examples/reminders is such an application.
func Example_secrets() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Clinic"), nil)

	token := awssecretsmanager.Secret_FromSecretNameV2(stack, jsii.String("SmsToken"), jsii.String("reminders/sms-token"))
	exactlyonce.NewConsumer(stack, "Reminders", &exactlyonce.ConsumerProps{
		Code:        awslambda.Code_FromAsset(jsii.String("testdata/consumer"), nil), // your bootstrap's folder
		Config:      exactlyonce.Config{Key: "reminderId", Namespace: "reminders"},   // lease mode, the default
		Environment: map[string]*string{"SMS_URL": jsii.String("https://sms.example/v1")},
		Secrets:     map[string]awssecretsmanager.ISecret{"SMS_TOKEN": token}, // the ARN; the role may read it
		Nag:         true,                                                     // AwsSolutions and Serverless on the consumer
	})

	tpl := assertions.Template_FromStack(stack, nil)
	arn := assertions.Match_ObjectLike(&map[string]any{"Fn::Join": []any{"", assertions.Match_ArrayWith(&[]any{
		assertions.Match_StringLikeRegexp(jsii.String(":secret:reminders/sms-token$")),
	})}})
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{
			"SMS_URL": "https://sms.example/v1", "SMS_TOKEN": arn, consumer.EnvKey: "reminderId",
		})},
	})
	tpl.HasResourceProperties(jsii.String("AWS::IAM::Policy"), map[string]any{
		"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
			"Action": []any{"secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"},
		})})},
	})
	fmt.Println("consumer env SMS_URL, SMS_TOKEN=<the secret's ARN>, IDEM_KEY=reminderId")
	fmt.Println("the role may read the secret")
	fmt.Println(len(cdktest.NagFindings(stack)), "cdk-nag findings")
	// Output:
	// consumer env SMS_URL, SMS_TOKEN=<the secret's ARN>, IDEM_KEY=reminderId
	// the role may read the secret
	// 0 cdk-nag findings
}

const tokenARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:sms-token-AbCdEf"

// TestSecrets: each secret's variable holds its ARN, never its value; the
// consumer's role may read each secret and nothing else of Secrets
// Manager; a secret under a customer-managed key may be decrypted by the
// role through Secrets Manager only.
func TestSecrets(t *testing.T) {
	stack := newStack()
	key := awskms.NewKey(stack, jsii.String("SecretKey"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})
	owned := awssecretsmanager.NewSecret(stack, jsii.String("Password"), &awssecretsmanager.SecretProps{EncryptionKey: key})
	imported := awssecretsmanager.Secret_FromSecretCompleteArn(stack, jsii.String("Token"), jsii.String(tokenARN))
	exactlyonce.NewConsumer(stack, "Orders", &exactlyonce.ConsumerProps{
		Code:    cdktest.Code(),
		Secrets: map[string]awssecretsmanager.ISecret{"SMS_TOKEN": imported, "DB_PASSWORD": owned},
	})
	tpl := cdktest.Synth(t, stack)

	vars := cdktest.Env(tpl.One(t, "AWS::Lambda::Function", "OrdersConsumer"))
	if vars["SMS_TOKEN"] != tokenARN || !strings.Contains(cdktest.JSON(vars["DB_PASSWORD"]), `{"Ref":"Password`) {
		t.Errorf("SMS_TOKEN = %v, DB_PASSWORD = %v; want the secrets' ARNs", vars["SMS_TOKEN"], vars["DB_PASSWORD"])
	}
	read := map[string]bool{}
	for id, p := range tpl.ByType("AWS::IAM::Policy") {
		if !strings.HasPrefix(id, "OrdersRoleConsumer") {
			continue
		}
		doc, _ := p["PolicyDocument"].(map[string]any)
		list, _ := doc["Statement"].([]any)
		for _, s := range list {
			m := s.(map[string]any)
			actions, resource := strings.Join(cdktest.Strings(m["Action"]), ","), cdktest.JSON(m["Resource"])
			if !strings.Contains(actions, "secretsmanager:") {
				continue
			}
			if actions != "secretsmanager:GetSecretValue,secretsmanager:DescribeSecret" {
				t.Errorf("consumer: %s on %s, want GetSecretValue and DescribeSecret only", actions, resource)
			}
			read[resource] = true
		}
	}
	if !read[`"`+tokenARN+`"`] || len(read) != 2 {
		t.Errorf("the consumer may read %v, want %s and the stack's secret", read, tokenARN)
	}
	policy := cdktest.JSON(tpl.One(t, "AWS::KMS::Key", "SecretKey")["KeyPolicy"])
	if !strings.Contains(policy, `"Action":"kms:Decrypt","Condition":{"StringEquals":{"kms:ViaService":`) ||
		!strings.Contains(policy, `"Principal":{"AWS":{"Fn::GetAtt":["OrdersRoleConsumer`) {
		t.Errorf("the secret's key policy does not let the consumer decrypt through Secrets Manager: %s", policy)
	}
}

// TestSecretsRefused: a secret's variable may not be one the runtime
// reads, nor one Environment sets; one panic names every problem.
func TestSecretsRefused(t *testing.T) {
	stack := newStack()
	token := awssecretsmanager.Secret_FromSecretCompleteArn(stack, jsii.String("Token"), jsii.String(tokenARN))
	msg := cdktest.Panics(func() {
		exactlyonce.NewConsumer(stack, "Orders", &exactlyonce.ConsumerProps{
			Code:        cdktest.Code(),
			Environment: map[string]*string{"SMS_TOKEN": jsii.String("plain")},
			Secrets: map[string]awssecretsmanager.ISecret{
				"SMS_TOKEN": token, consumer.EnvTable: token, consumer.EnvLogLevel: token, "NONE": nil,
			},
		})
	})
	for _, want := range []string{
		`invalid consumer "Orders"`,
		"props.Secrets must not set IDEM_TABLE, LOG_LEVEL: the runtime reads them",
		"props.Secrets and props.Environment both set SMS_TOKEN",
		`props.Secrets["NONE"] is nil`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("panic %q does not mention %q", msg, want)
		}
	}
}
