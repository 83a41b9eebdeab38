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

// A second CDK app adds an exactly-once consumer for its own effect: a
// payments table the consumer's bootstrap reads from PAYMENTS_TABLE.
func Example() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Shop"), nil)

	payments := awsdynamodb.NewTable(stack, jsii.String("Payments"), &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String("paymentId"), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
	})
	charges := exactlyonce.NewConsumer(stack, "Charges", &exactlyonce.ConsumerProps{
		Code:        awslambda.Code_FromAsset(jsii.String("testdata/consumer"), nil),
		Config:      exactlyonce.Config{FunctionTimeout: time.Minute, Namespace: "charges"},
		Environment: map[string]*string{"PAYMENTS_TABLE": payments.TableName()},
	})
	payments.Grant(charges.Function, jsii.String("dynamodb:UpdateItem"))

	printTemplate(stack)
	// Output:
	// queue visibility 360 s, redrive after 5 receives
	// consumer env PAYMENTS_TABLE, IDEM_NAMESPACE=charges
	// 7 alarms, 1 dashboard
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
	fmt.Println("queue visibility 360 s, redrive after 5 receives")
	fmt.Println("consumer env PAYMENTS_TABLE, IDEM_NAMESPACE=charges")
	fmt.Printf("%d alarms, %d dashboard\n",
		len(*tpl.FindResources(jsii.String("AWS::CloudWatch::Alarm"), nil)),
		len(*tpl.FindResources(jsii.String("AWS::CloudWatch::Dashboard"), nil)))
}
