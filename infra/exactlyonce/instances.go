package exactlyonce

import (
	"errors"
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// Instances is where a consumer on Lambda Managed Instances
// (Config.ManagedInstances) runs: an existing capacity provider, or the
// network of the one the construct creates for it. The service needs a
// VPC for either; the construct creates none.
type Instances struct {
	// CapacityProvider is an existing capacity provider, e.g. one that
	// several consumers share (its functions must trust one another: a
	// capacity provider is their security boundary), or one with a KMS key,
	// instance types or scaling of a team's choosing. It must offer arm64
	// (Graviton) instances: the consumer is built for arm64. Without it,
	// the construct creates one from the fields below.
	CapacityProvider awslambda.ICapacityProvider
	// Subnets (1 to 16, best in three Availability Zones) and
	// SecurityGroups (1 to 5) of the capacity provider the construct
	// creates. The instances need a way to the AWS APIs the consumer calls
	// (DynamoDB, SQS, CloudWatch Logs, X-Ray, and the effect's): a NAT
	// gateway or VPC endpoints, and security groups that let them out.
	Subnets        []awsec2.ISubnet
	SecurityGroups []awsec2.ISecurityGroup
	// MaxVCPUs caps the created capacity provider's vCPUs (12..15000; 0
	// takes the service's default, 400): a ceiling on cost, and so on the
	// execution environments.
	MaxVCPUs int
}

// The created capacity provider's vCPU cap, as awscdk v2.270.0 checks it,
// and the sizes of its network (CloudFormation's and CDK's).
const (
	minVCPUs, maxVCPUs   = 12, 15000
	maxSubnets           = 16
	maxSecurityGroups    = 5
	managedFunctionID    = "ConsumerOnInstances"
	defaultFunctionID    = "Consumer"
	capacityProviderName = "CapacityProvider"
)

// checkInstances: Config.ManagedInstances and ConsumerProps.Instances come
// together, and Instances is an existing capacity provider or a new one's
// network, not both.
func checkInstances(cfg Config, in *Instances) error {
	switch {
	case cfg.OnManagedInstances() && in == nil:
		return errors.New("Config.ManagedInstances needs props.Instances: an existing CapacityProvider, or the Subnets and SecurityGroups of the one the construct creates")
	case !cfg.OnManagedInstances() && in != nil:
		return fmt.Errorf("props.Instances is set, but Config.ManagedInstances.Concurrency is 0: set it (the invocations one execution environment runs at once, 1..%d) to run on Managed Instances, or leave Instances nil", maxEnvironmentConcurrency)
	case in == nil:
		return nil
	case in.CapacityProvider != nil:
		if len(in.Subnets) > 0 || len(in.SecurityGroups) > 0 || in.MaxVCPUs != 0 {
			return errors.New("props.Instances is an existing CapacityProvider or the Subnets, SecurityGroups and MaxVCPUs of a new one, not both: the existing one's network and vCPUs are its own")
		}
		return nil
	}
	var errs []error
	if n := len(in.Subnets); n < 1 || n > maxSubnets {
		errs = append(errs, fmt.Errorf("props.Instances.Subnets must hold 1..%d subnets (where the capacity provider launches instances), got %d", maxSubnets, n))
	}
	if n := len(in.SecurityGroups); n < 1 || n > maxSecurityGroups {
		errs = append(errs, fmt.Errorf("props.Instances.SecurityGroups must hold 1..%d security groups (the instances' own), got %d", maxSecurityGroups, n))
	}
	if v := in.MaxVCPUs; v != 0 && (v < minVCPUs || v > maxVCPUs) {
		errs = append(errs, fmt.Errorf("props.Instances.MaxVCPUs must be 0 (the service's default, 400) or in %d..%d, got %d", minVCPUs, maxVCPUs, v))
	}
	return errors.Join(errs...)
}

// functionID is the consumer function's construct id. Lambda sets a
// function's compute when it creates it and cannot move an existing
// function onto a capacity provider or off it, so a consumer that turns
// Managed Instances on or off gets a new function (and with it a new event
// source mapping, role and log group) instead of a failed update. The
// queue, the DLQ and the receipts stay: for the minute both functions poll,
// the receipts keep each key's effect to one.
func functionID(cfg Config) string {
	if cfg.OnManagedInstances() {
		return managedFunctionID
	}
	return defaultFunctionID
}

// runOnInstances puts the consumer function on its capacity provider,
// created from in's network unless in names one.
//
// It writes the function's CapacityProviderConfig itself, as
// CapacityProvider.addFunction does, because an existing capacity provider
// (awslambda.ICapacityProvider) has no AddFunction in awscdk v2.270.0: one
// code path for both. PublishToLatestPublished is written out: a Managed
// Instances function runs published versions only, its unqualified name
// (which the event source mapping invokes) means $LATEST.PUBLISHED, and
// each deployment must publish it again, or the mapping keeps invoking the
// old code.
func (c *Consumer) runOnInstances(in *Instances) {
	mi := c.Config.ManagedInstances
	c.CapacityProvider = in.CapacityProvider
	if c.CapacityProvider == nil {
		c.CapacityProvider = c.newCapacityProvider(in)
	}
	fn := c.Function.Node().DefaultChild().(awslambda.CfnFunction)
	fn.SetCapacityProviderConfig(&awslambda.CfnFunction_CapacityProviderConfigProperty{
		LambdaManagedInstancesCapacityProviderConfig: &awslambda.CfnFunction_LambdaManagedInstancesCapacityProviderConfigProperty{
			CapacityProviderArn:                   c.CapacityProvider.CapacityProviderArn(),
			PerExecutionEnvironmentMaxConcurrency: jsii.Number(mi.Concurrency),
			ExecutionEnvironmentMemoryGiBPerVCpu:  jsii.Number(mi.MemoryGiBPerVCPU),
		},
	})
	fn.SetPublishToLatestPublished(jsii.Bool(true))
	if mi.MinEnvironments != 0 || mi.MaxEnvironments != 0 {
		fn.SetFunctionScalingConfig(&awslambda.CfnFunction_FunctionScalingConfigProperty{
			MinExecutionEnvironments: positive(mi.MinEnvironments),
			MaxExecutionEnvironments: positive(mi.MaxEnvironments),
		})
	}
}

// newCapacityProvider creates the consumer's own capacity provider: arm64
// instances (the bootstrap's architecture) in the given network, its
// system logs in a log group of the consumer's retention, removal policy
// and key. The capacity provider itself is always deleted with the stack:
// it holds no data, and a retained one would keep its instances running.
//
// Its data is encrypted with an AWS managed key, not ConsumerProps'
// EncryptionKey: the instances' volumes would need the key policy to let
// EC2 use the key on the operator role's behalf, which is a team's to
// grant; a team that wants its key passes its own capacity provider.
func (c *Consumer) newCapacityProvider(in *Instances) awslambda.ICapacityProvider {
	subnets := in.Subnets
	groups := in.SecurityGroups
	logs := awslogs.NewLogGroup(c, jsii.String("LogGroup"+capacityProviderName), &awslogs.LogGroupProps{
		Retention:     c.Config.LogRetention,
		RemovalPolicy: c.Config.RemovalPolicy,
		EncryptionKey: c.key,
	})
	provider := awslambda.NewCapacityProvider(c, jsii.String(capacityProviderName), &awslambda.CapacityProviderProps{
		Subnets:        &subnets,
		SecurityGroups: &groups,
		Architectures:  &[]awslambda.Architecture{awslambda.Architecture_ARM_64()},
		MaxVCpuCount:   positive(in.MaxVCPUs),
		LogGroup:       logs,
	})
	// CDK makes the operator role, the one Lambda manages the instances
	// with, from the policy the service documents for it.
	cdknag.NagSuppressions_AddResourceSuppressions(provider, &[]*cdknag.NagPackSuppression{{
		Id:        jsii.String("AwsSolutions-IAM4"),
		Reason:    jsii.String("The capacity provider's operator role, with which Lambda launches and manages the consumer's instances, has AWS's AWSLambdaManagedEC2ResourceOperator policy: the one the service documents for it, kept up to date by AWS with the EC2 actions the service needs."),
		AppliesTo: &[]any{"Policy::arn:<AWS::Partition>:iam::aws:policy/AWSLambdaManagedEC2ResourceOperator"},
	}}, jsii.Bool(true))
	return provider
}

// positive is n as a CloudFormation number, nil (unset) for 0.
func positive(n int) *float64 {
	if n == 0 {
		return nil
	}
	return jsii.Number(n)
}
