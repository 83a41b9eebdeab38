package exactlyonce_test

import (
	"fmt"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/exactlyonce/sqsidem/infra/exactlyonce"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// A second CDK app adds an exactly-once consumer for its own effect:
// charging payments into a table the consumer's bootstrap reads from
// PAYMENTS_TABLE. Its main is pkg/idem/consumer's ExampleStart: the effect
// is DynamoDB writes (Effect.Tx), so Mode says transactional (the default,
// lease, would stop the function at init: "the effect has no Lease
// function"), and Key names the business key, which the runtime reads as
// IDEM_KEY and the stack outputs as ChargesKey for idemctl. The
// README's way 2 copies this from "charges :=" to the Grant.
func Example() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Shop"), nil)

	payments := awsdynamodb.NewTable(stack, jsii.String("Payments"), &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String("paymentId"), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
	})
	charges := exactlyonce.NewConsumer(stack, "Charges", &exactlyonce.ConsumerProps{
		Code: awslambda.Code_FromAsset(jsii.String("testdata/consumer"), nil), // your bootstrap's folder, e.g. build/charges
		Config: exactlyonce.Config{
			Mode:            consumer.ModeTransactional, // the effect is a Tx; a Lease needs consumer.ModeLease, the default
			Key:             "paymentId",                // IDEM_KEY, and the output ChargesKey idemctl reads
			Namespace:       "charges",
			FunctionTimeout: time.Minute,
		},
		Environment: map[string]*string{"PAYMENTS_TABLE": payments.TableName()},
	})
	payments.Grant(charges.Function, jsii.String("dynamodb:UpdateItem"))

	printTemplate(stack)
	// Output:
	// queue visibility 360 s, redrive after 5 receives
	// consumer env PAYMENTS_TABLE, IDEM_MODE=transactional, IDEM_KEY=paymentId, IDEM_NAMESPACE=charges
	// output ChargesKey=paymentId
	// 8 alarms, 1 dashboard
}

// In lease mode (Mode empty, or consumer.ModeLease) the function's effect is
// a Lease, any side effect: here pkg/idem/consumer's ExampleStart_lease, a
// call to a partner's API with the key as its Idempotency-Key, and a
// Reconcile that asks the partner. UnknownOutcome hold parks a key whose
// outcome the partner cannot tell until an operator settles it (AlarmHeld,
// idemctl resolve); the default, retry, runs the effect again.
func Example_lease() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Billing"), nil)

	exactlyonce.NewConsumer(stack, "Notices", &exactlyonce.ConsumerProps{
		Code: awslambda.Code_FromAsset(jsii.String("testdata/consumer"), nil), // your bootstrap's folder
		Config: exactlyonce.Config{
			Mode:           consumer.ModeLease,   // the effect is a Lease (and a Reconcile)
			UnknownOutcome: consumer.UnknownHold, // what Reconcile cannot tell waits for a person
			Key:            "noticeId",           // IDEM_KEY, and the output NoticesKey
			Namespace:      "notices",
		},
		Environment: map[string]*string{"PARTNER_URL": jsii.String("https://partner.example/notices")},
	})

	tpl := assertions.Template_FromStack(stack, nil)
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{
			consumer.EnvMode:           consumer.ModeLease,
			consumer.EnvUnknownOutcome: consumer.UnknownHold,
			consumer.EnvKey:            "noticeId",
			"PARTNER_URL":              "https://partner.example/notices",
		})},
	})
	tpl.HasOutput(jsii.String("Notices"+consumer.OutputKey), map[string]any{"Value": "noticeId"})
	fmt.Println("consumer env IDEM_MODE=lease, IDEM_UNKNOWN_OUTCOME=hold, IDEM_KEY=noticeId, PARTNER_URL")
	fmt.Println("output NoticesKey=noticeId")
	// Output:
	// consumer env IDEM_MODE=lease, IDEM_UNKNOWN_OUTCOME=hold, IDEM_KEY=noticeId, PARTNER_URL
	// output NoticesKey=noticeId
}

// printTemplate checks the example's template with CDK's assertions (which
// panic, failing the example, on a mismatch) and prints what it found.
func printTemplate(stack awscdk.Stack) {
	tpl := assertions.Template_FromStack(stack, nil)
	tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
		"VisibilityTimeout": 360,
		"RedrivePolicy":     map[string]any{"maxReceiveCount": 5},
	})
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"Timeout": 60,
		"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{
			"PAYMENTS_TABLE":      map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^Payments"))},
			consumer.EnvMode:      consumer.ModeTransactional,
			consumer.EnvKey:       "paymentId",
			consumer.EnvNamespace: "charges",
		})},
	})
	tpl.HasResourceProperties(jsii.String("AWS::IAM::Policy"), map[string]any{
		"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{map[string]any{
			"Action":   "dynamodb:UpdateItem",
			"Effect":   "Allow",
			"Resource": []any{map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^Payments")), "Arn"}}},
		}})},
	})
	tpl.HasOutput(jsii.String("Charges"+consumer.OutputKey), map[string]any{"Value": "paymentId"})
	fmt.Println("queue visibility 360 s, redrive after 5 receives")
	fmt.Println("consumer env PAYMENTS_TABLE, IDEM_MODE=transactional, IDEM_KEY=paymentId, IDEM_NAMESPACE=charges")
	fmt.Println("output ChargesKey=paymentId")
	fmt.Printf("%d alarms, %d dashboard\n",
		len(*tpl.FindResources(jsii.String("AWS::CloudWatch::Alarm"), nil)),
		len(*tpl.FindResources(jsii.String("AWS::CloudWatch::Dashboard"), nil)))
}
