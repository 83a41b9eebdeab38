package exactlyonce

import (
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// FunctionProps configures NewFunction.
type FunctionProps struct {
	// Code is the function's bootstrap, built for provided.al2023 on arm64,
	// e.g. awslambda.Code_FromAsset(jsii.String("build/consumer"), nil).
	Code        awslambda.Code
	Timeout     time.Duration
	MemoryMB    int
	Environment map[string]*string
	// ReservedConcurrency reserves (and caps) the function's concurrency;
	// 0 reserves none.
	ReservedConcurrency int
	LogRetention        awslogs.RetentionDays
	// RemovalPolicy of the log group.
	RemovalPolicy awscdk.RemovalPolicy
	// EncryptionKey, if set, encrypts the log group and the environment
	// variables (see NewKey for the key policy CloudWatch Logs needs).
	EncryptionKey awskms.IKey
	// Key is EncryptionKey's name before v0.3.0, taken as EncryptionKey;
	// setting both is an error.
	//
	// Deprecated: use EncryptionKey. Removed in v0.4.0.
	Key awskms.IKey
	// Tracing is the function's X-Ray tracing; empty means
	// awslambda.Tracing_ACTIVE. Active and PassThrough give the role
	// xray:PutTraceSegments and xray:PutTelemetryRecords; Disabled neither.
	Tracing awslambda.Tracing
	// NoDLQReason says why the function needs no dead-letter queue for
	// asynchronous invocations; it suppresses cdk-nag's Serverless-LambdaDLQ.
	// Empty: no suppression.
	NoDLQReason string
}

// NewFunction creates a Go Lambda (provided.al2023, arm64, active X-Ray
// tracing unless FunctionProps.Tracing says otherwise) with its own role
// and log group, the way NewConsumer creates the consumer; use it for the
// functions that work alongside (a producer). The role is hand-made so that
// no AWS managed policy (AWSLambdaBasicExecutionRole allows writing to every
// log group) is attached: it may write to its own log group only. Grant it
// what else it needs. It panics on an invalid Tracing, or on both
// EncryptionKey and Key set.
func NewFunction(scope constructs.Construct, id string, props *FunctionProps) awslambda.Function {
	tracing := props.Tracing
	if tracing == "" {
		tracing = awslambda.Tracing_ACTIVE
	}
	if !slices.Contains(tracingModes, tracing) {
		panic(fmt.Sprintf("exactlyonce: function %q: Tracing must be one of %v, got %q", id, tracingModes, tracing))
	}
	key, err := encryptionKey(props.EncryptionKey, props.Key)
	if err != nil {
		panic(fmt.Sprintf("exactlyonce: function %q: %v", id, err))
	}
	role := awsiam.NewRole(scope, jsii.String("Role"+id), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("Execution role of the " + id + " function"),
	})
	logGroup := awslogs.NewLogGroup(scope, jsii.String("LogGroup"+id), &awslogs.LogGroupProps{
		Retention:     props.LogRetention,
		RemovalPolicy: props.RemovalPolicy,
		EncryptionKey: key,
	})
	logGroup.GrantWrite(role)

	var reserved *float64
	if props.ReservedConcurrency > 0 {
		reserved = jsii.Number(props.ReservedConcurrency)
	}
	fn := awslambda.NewFunction(scope, jsii.String(id), &awslambda.FunctionProps{
		Runtime:                      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:                 awslambda.Architecture_ARM_64(),
		Handler:                      jsii.String("bootstrap"),
		Code:                         props.Code,
		Timeout:                      seconds(props.Timeout),
		MemorySize:                   jsii.Number(props.MemoryMB),
		Tracing:                      tracing,
		Role:                         role,
		LogGroup:                     logGroup,
		Environment:                  &props.Environment,
		EnvironmentEncryption:        key,
		ReservedConcurrentExecutions: reserved,
	})
	if key != nil {
		// Lambda decrypts the environment with the execution role's
		// permissions when it starts an instance.
		key.GrantDecrypt(role)
	}

	if tracing != awslambda.Tracing_DISABLED {
		// CDK grants these for Active and PassThrough alike; without
		// tracing there is no wildcard to suppress.
		cdknag.NagSuppressions_AddResourceSuppressions(role, &[]*cdknag.NagPackSuppression{{
			Id:        jsii.String("AwsSolutions-IAM5"),
			Reason:    jsii.String(tracingName[tracing] + " X-Ray tracing needs xray:PutTraceSegments and xray:PutTelemetryRecords, which support no resource-level permissions (Resource '*')."),
			AppliesTo: &[]any{"Resource::*"},
		}}, jsii.Bool(true))
	}
	if props.NoDLQReason != "" {
		cdknag.NagSuppressions_AddResourceSuppressions(fn, &[]*cdknag.NagPackSuppression{{
			Id:     jsii.String("Serverless-LambdaDLQ"),
			Reason: jsii.String(props.NoDLQReason),
		}}, jsii.Bool(false))
	}
	return fn
}

// tracingName is how CloudFormation (TracingConfig.Mode) spells each mode.
var tracingName = map[awslambda.Tracing]string{
	awslambda.Tracing_ACTIVE: "Active", awslambda.Tracing_PASS_THROUGH: "PassThrough", awslambda.Tracing_DISABLED: "Disabled",
}

func seconds(d time.Duration) awscdk.Duration {
	return awscdk.Duration_Seconds(jsii.Number(d.Seconds()))
}
