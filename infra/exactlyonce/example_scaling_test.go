package exactlyonce_test

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/exactlyonce/sqsidem/infra/exactlyonce"
)

// A steady, high-volume consumer on Lambda Managed Instances: the construct
// creates a capacity provider of arm64 instances in the app's private
// subnets, and each execution environment (one process) runs 8 batches at
// once, in 4 GiB and 2 vCPUs. Lambda tells the process
// AWS_LAMBDA_MAX_CONCURRENCY=8; the runtime needs nothing else.
func Example_managedInstances() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Shop"), nil)

	vpc := awsec2.NewVpc(stack, jsii.String("Vpc"), &awsec2.VpcProps{MaxAzs: jsii.Number(3)})
	instances := awsec2.NewSecurityGroup(stack, jsii.String("Instances"), &awsec2.SecurityGroupProps{Vpc: vpc})
	exactlyonce.NewConsumer(stack, "Orders", &exactlyonce.ConsumerProps{
		Code: awslambda.Code_FromAsset(jsii.String("testdata/consumer"), nil), // your bootstrap's folder
		Config: exactlyonce.Config{
			Key:      "orderId",
			MemoryMB: 4096, // an environment's: 2 vCPUs of 2 GiB
			ManagedInstances: exactlyonce.ManagedInstances{
				Concurrency:     8,  // batches one environment runs at once
				MaxEnvironments: 20, // 20 x 8 = 160 at most, at least MaxConcurrency (5)
			},
		},
		Instances: &exactlyonce.Instances{
			Subnets:        *vpc.PrivateSubnets(), // with a way out to DynamoDB, SQS and CloudWatch
			SecurityGroups: []awsec2.ISecurityGroup{instances},
		},
	})

	tpl := assertions.Template_FromStack(stack, nil)
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::CapacityProvider"), map[string]any{
		"InstanceRequirements": map[string]any{"Architectures": []any{"arm64"}},
	})
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"CapacityProviderConfig": map[string]any{"LambdaManagedInstancesCapacityProviderConfig": map[string]any{
			"CapacityProviderArn":                   assertions.Match_AnyValue(),
			"PerExecutionEnvironmentMaxConcurrency": 8,
			"ExecutionEnvironmentMemoryGiBPerVCpu":  2,
		}},
		"PublishToLatestPublished": true,
		"MemorySize":               4096,
	})
	fmt.Println("capacity provider: arm64 instances in the VPC's private subnets")
	fmt.Println("function: 8 invocations an environment, 4096 MB at 2 GiB per vCPU, published on each deployment")
	// Output:
	// capacity provider: arm64 instances in the VPC's private subnets
	// function: 8 invocations an environment, 4096 MB at 2 GiB per vCPU, published on each deployment
}

// A consumer whose traffic comes in bursts of thousands of messages a
// second: the event source mapping in provisioned mode keeps 10 pollers
// ready and scales up to 100 (each invokes up to 10 batches at once), in
// place of MaxConcurrency, which it must leave 0.
func Example_provisionedPollers() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Shop"), nil)

	exactlyonce.NewConsumer(stack, "Orders", &exactlyonce.ConsumerProps{
		Code: awslambda.Code_FromAsset(jsii.String("testdata/consumer"), nil), // your bootstrap's folder
		Config: exactlyonce.Config{
			Key:        "orderId",
			MinPollers: 10,  // ready before the burst: billed while idle
			MaxPollers: 100, // up to 1,000 batches at once
		},
	})

	tpl := assertions.Template_FromStack(stack, nil)
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
		"ProvisionedPollerConfig": map[string]any{"MinimumPollers": 10, "MaximumPollers": 100},
		"ScalingConfig":           assertions.Match_Absent(),
	})
	fmt.Println("mapping: 10 to 100 provisioned pollers, no maximum concurrency")
	// Output:
	// mapping: 10 to 100 provisioned pollers, no maximum concurrency
}
