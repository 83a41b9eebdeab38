package exactlyonce_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/exactlyonce/sqsidem/infra/exactlyonce"
	"github.com/exactlyonce/sqsidem/infra/exactlyonce/cdktest"
)

// sharedProviderARN is an existing capacity provider, as a team passes it.
const sharedProviderARN = "arn:aws:lambda:eu-west-1:123456789012:capacity-provider:shared"

// network is a VPC's private subnets and a security group, for the
// capacity provider the construct creates.
func network(stack awscdk.Stack) ([]awsec2.ISubnet, []awsec2.ISecurityGroup) {
	vpc := awsec2.NewVpc(stack, jsii.String("Vpc"), &awsec2.VpcProps{MaxAzs: jsii.Number(3), NatGateways: jsii.Number(1)})
	sg := awsec2.NewSecurityGroup(stack, jsii.String("Instances"), &awsec2.SecurityGroupProps{Vpc: vpc})
	return *vpc.PrivateSubnets(), []awsec2.ISecurityGroup{sg}
}

// synthIn synthesizes a consumer "Orders" whose props are made in its stack.
func synthIn(t *testing.T, props func(awscdk.Stack) exactlyonce.ConsumerProps) (*exactlyonce.Consumer, cdktest.Template) {
	t.Helper()
	stack := newStack()
	p := props(stack)
	if p.Code == nil {
		p.Code = cdktest.Code()
	}
	c := exactlyonce.NewConsumer(stack, "Orders", &p)
	return c, cdktest.Synth(t, stack)
}

// TestProvisionedPollers: MinPollers and MaxPollers become the mapping's
// ProvisionedPollerConfig, without a ScalingConfig (the service refuses
// both), with the event counts the dashboard reads; standard mode keeps
// MaximumConcurrency and has neither.
func TestProvisionedPollers(t *testing.T) {
	_, tpl := synthConsumer(t, exactlyonce.ConsumerProps{Config: exactlyonce.Config{MinPollers: 5, MaxPollers: 50}})
	cdktest.Check(t, "provisioned mapping", func() {
		tpl.ResourceCountIs(jsii.String("AWS::Lambda::EventSourceMapping"), jsii.Number(1))
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
			"BatchSize":               10,
			"FunctionResponseTypes":   []any{"ReportBatchItemFailures"},
			"ProvisionedPollerConfig": map[string]any{"MinimumPollers": 5, "MaximumPollers": 50},
			"MetricsConfig":           map[string]any{"Metrics": []any{"EventCount"}},
			"ScalingConfig":           assertions.Match_Absent(),
		})
	})

	_, standard := synthConsumer(t, exactlyonce.ConsumerProps{})
	cdktest.Check(t, "standard mapping", func() {
		standard.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
			"ScalingConfig":           map[string]any{"MaximumConcurrency": 5},
			"ProvisionedPollerConfig": assertions.Match_Absent(),
			"MetricsConfig":           assertions.Match_Absent(),
		})
	})
}

// TestProvisionedDashboard: in provisioned mode the dashboard graphs the
// pollers running against MinPollers and MaxPollers and against what the
// concurrency needs, and the mapping's event counts, all by the mapping's
// UUID; in standard mode there is no such row (the metrics do not exist).
func TestProvisionedDashboard(t *testing.T) {
	mappingID := func(tpl cdktest.Template) string {
		for id := range tpl.ByType("AWS::Lambda::EventSourceMapping") {
			return id
		}
		t.Fatal("no event source mapping")
		return ""
	}
	_, tpl := synthConsumer(t, exactlyonce.ConsumerProps{Config: exactlyonce.Config{MinPollers: 4, MaxPollers: 40}})
	body := onlyDashboard(t, tpl)
	uuid := `"EventSourceMappingUUID","{Ref:` + mappingID(tpl) + `}"`
	for _, want := range []string{
		`"AWS/Lambda","ProvisionedPollers",` + uuid,
		`"AWS/Lambda","PolledEventCount",` + uuid,
		`"AWS/Lambda","InvokedEventCount",` + uuid,
		`"AWS/Lambda","DeletedEventCount",` + uuid,
		`"AWS/Lambda","FailedInvokeEventCount",` + uuid,
		`"expression":"CEIL(concurrency / 10)"`,
		`{"label":"MinPollers","value":4,"yAxis":"left"}`,
		`{"label":"MaxPollers","value":40,"yAxis":"left"}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("provisioned dashboard lacks %s", want)
		}
	}

	_, standard := synthConsumer(t, exactlyonce.ConsumerProps{})
	if body := onlyDashboard(t, standard); strings.Contains(body, "ProvisionedPollers") || strings.Contains(body, "EventSourceMappingUUID") {
		t.Errorf("standard mode's dashboard graphs the provisioned mapping's metrics: %s", body)
	}
}

func onlyDashboard(t *testing.T, tpl cdktest.Template) string {
	t.Helper()
	dashboards := tpl.ByType("AWS::CloudWatch::Dashboard")
	if len(dashboards) != 1 {
		t.Fatalf("want one dashboard, got %d", len(dashboards))
	}
	for _, d := range dashboards {
		return dashboardBody(t, d["DashboardBody"])
	}
	return ""
}

// TestManagedInstancesCreated: with a network, the construct creates an
// arm64 capacity provider in it and puts the function there, Concurrency
// invocations an environment, published to $LATEST.PUBLISHED on every
// deployment; the mapping invokes that function.
func TestManagedInstancesCreated(t *testing.T) {
	c, tpl := synthIn(t, func(stack awscdk.Stack) exactlyonce.ConsumerProps {
		subnets, groups := network(stack)
		return exactlyonce.ConsumerProps{
			Config: exactlyonce.Config{
				MemoryMB: 4096, FunctionTimeout: 20 * time.Minute,
				ManagedInstances: exactlyonce.ManagedInstances{Concurrency: 8, MaxEnvironments: 10},
			},
			Instances: &exactlyonce.Instances{Subnets: subnets, SecurityGroups: groups, MaxVCPUs: 24},
		}
	})
	if c.CapacityProvider == nil {
		t.Fatal("Consumer.CapacityProvider is nil")
	}
	providers := tpl.ByType("AWS::Lambda::CapacityProvider")
	if len(providers) != 1 {
		t.Fatalf("want one capacity provider, got %d", len(providers))
	}
	var providerID string
	for id := range providers {
		providerID = id
	}
	if !strings.HasPrefix(providerID, "OrdersCapacityProvider") {
		t.Errorf("capacity provider %s: want it under the consumer (OrdersCapacityProvider...)", providerID)
	}
	cdktest.Check(t, "capacity provider", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::CapacityProvider"), map[string]any{
			"VpcConfig": map[string]any{
				"SubnetIds":        assertions.Match_ArrayWith(&[]any{map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("VpcPrivateSubnet1"))}}),
				"SecurityGroupIds": []any{map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^Instances")), "GroupId"}}},
			},
			"InstanceRequirements":          map[string]any{"Architectures": []any{"arm64"}},
			"CapacityProviderScalingConfig": map[string]any{"MaxVCpuCount": 24},
			"PermissionsConfig":             map[string]any{"CapacityProviderOperatorRoleArn": assertions.Match_AnyValue()},
			"TelemetryConfig":               map[string]any{"LoggingConfig": map[string]any{"LogGroup": map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^OrdersLogGroupCapacityProvider"))}}},
		})
	})
	if r := tpl.Resources[providerID]; r.Metadata["DeletionPolicy"] != nil {
		t.Errorf("capacity provider has a deletion policy %v; it must go with the stack", r.Metadata["DeletionPolicy"])
	}
	cdktest.Check(t, "capacity provider's log group", func() {
		tpl.HasResource(jsii.String("AWS::Logs::LogGroup"), map[string]any{
			"Properties":     map[string]any{"RetentionInDays": 30},
			"DeletionPolicy": "Retain",
		})
	})

	fn := tpl.One(t, "AWS::Lambda::Function", "OrdersConsumerOnInstances")
	cdktest.Check(t, "function on the capacity provider", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
			"CapacityProviderConfig": map[string]any{"LambdaManagedInstancesCapacityProviderConfig": map[string]any{
				"CapacityProviderArn":                   map[string]any{"Fn::GetAtt": []any{providerID, "Arn"}},
				"PerExecutionEnvironmentMaxConcurrency": 8,
				"ExecutionEnvironmentMemoryGiBPerVCpu":  2,
			}},
			"FunctionScalingConfig":        map[string]any{"MaxExecutionEnvironments": 10},
			"PublishToLatestPublished":     true,
			"MemorySize":                   4096,
			"Timeout":                      1200,
			"Architectures":                []any{"arm64"},
			"ReservedConcurrentExecutions": assertions.Match_Absent(),
		})
	})
	if got := cdktest.Num(tpl.One(t, "AWS::SQS::Queue", "OrdersQueue")["VisibilityTimeout"]); got != 6*cdktest.Num(fn["Timeout"]) {
		t.Errorf("VisibilityTimeout = %v, want 6 x the function's timeout %v: the rule holds on Managed Instances", got, fn["Timeout"])
	}
	cdktest.Check(t, "the mapping invokes the function on instances", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
			"FunctionName": map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^OrdersConsumerOnInstances"))},
		})
	})
}

// TestManagedInstancesExisting: an existing capacity provider is used as
// given: nothing created, the function points at its ARN.
func TestManagedInstancesExisting(t *testing.T) {
	c, tpl := synthIn(t, func(stack awscdk.Stack) exactlyonce.ConsumerProps {
		return exactlyonce.ConsumerProps{
			Config: exactlyonce.Config{ManagedInstances: exactlyonce.ManagedInstances{
				Concurrency: 16, MemoryGiBPerVCPU: 4, MinEnvironments: 3, MaxEnvironments: 6,
			}},
			Instances: &exactlyonce.Instances{
				CapacityProvider: awslambda.CapacityProvider_FromCapacityProviderArn(stack, jsii.String("Shared"), jsii.String(sharedProviderARN)),
			},
		}
	})
	if c.CapacityProvider == nil || *c.CapacityProvider.CapacityProviderArn() != sharedProviderARN {
		t.Errorf("Consumer.CapacityProvider = %v, want the one given", c.CapacityProvider)
	}
	if n := len(tpl.ByType("AWS::Lambda::CapacityProvider")); n != 0 {
		t.Errorf("%d capacity providers created beside the existing one", n)
	}
	cdktest.Check(t, "function on the existing capacity provider", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
			"CapacityProviderConfig": map[string]any{"LambdaManagedInstancesCapacityProviderConfig": map[string]any{
				"CapacityProviderArn":                   sharedProviderARN,
				"PerExecutionEnvironmentMaxConcurrency": 16,
				"ExecutionEnvironmentMemoryGiBPerVCpu":  4,
			}},
			"FunctionScalingConfig":    map[string]any{"MinExecutionEnvironments": 3, "MaxExecutionEnvironments": 6},
			"PublishToLatestPublished": true,
			"MemorySize":               4096, // the default: one vCPU of 4 GiB
		})
	})
}

// TestDefaultComputeHasNoInstances: without Managed Instances the
// function, its logical id and its properties are what they were.
func TestDefaultComputeHasNoInstances(t *testing.T) {
	c, tpl := synthConsumer(t, exactlyonce.ConsumerProps{})
	if c.CapacityProvider != nil {
		t.Errorf("Consumer.CapacityProvider = %v on the default compute", c.CapacityProvider)
	}
	if n := len(tpl.ByType("AWS::Lambda::CapacityProvider")); n != 0 {
		t.Errorf("%d capacity providers on the default compute", n)
	}
	var ids []string
	for id := range tpl.ByType("AWS::Lambda::Function") {
		ids = append(ids, id)
	}
	if len(ids) != 1 || !strings.HasPrefix(ids[0], "OrdersConsumer") || strings.HasPrefix(ids[0], "OrdersConsumerOnInstances") {
		t.Errorf("functions %v, want one OrdersConsumer...", ids)
	}
	cdktest.Check(t, "default compute", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
			"CapacityProviderConfig":   assertions.Match_Absent(),
			"PublishToLatestPublished": assertions.Match_Absent(),
			"FunctionScalingConfig":    assertions.Match_Absent(),
		})
	})
}

// TestScalingRefusals: what the two need from the props besides Config,
// refused by NewConsumer with the setting named; and Config's refusals
// reach NewConsumer too.
func TestScalingRefusals(t *testing.T) {
	on := exactlyonce.Config{ManagedInstances: exactlyonce.ManagedInstances{Concurrency: 8}}
	tests := []struct {
		name  string
		props func(awscdk.Stack) exactlyonce.ConsumerProps
		want  string
	}{
		{"managed instances without instances", func(awscdk.Stack) exactlyonce.ConsumerProps {
			return exactlyonce.ConsumerProps{Config: on}
		}, "Config.ManagedInstances needs props.Instances: an existing CapacityProvider, or the Subnets and SecurityGroups of the one the construct creates"},
		{"instances without managed instances", func(stack awscdk.Stack) exactlyonce.ConsumerProps {
			subnets, groups := network(stack)
			return exactlyonce.ConsumerProps{Instances: &exactlyonce.Instances{Subnets: subnets, SecurityGroups: groups}}
		}, "props.Instances is set, but Config.ManagedInstances.Concurrency is 0"},
		{"existing and new", func(stack awscdk.Stack) exactlyonce.ConsumerProps {
			subnets, _ := network(stack)
			return exactlyonce.ConsumerProps{Config: on, Instances: &exactlyonce.Instances{
				CapacityProvider: awslambda.CapacityProvider_FromCapacityProviderArn(stack, jsii.String("Shared"), jsii.String(sharedProviderARN)),
				Subnets:          subnets,
			}}
		}, "props.Instances is an existing CapacityProvider or the Subnets, SecurityGroups and MaxVCPUs of a new one, not both"},
		{"no subnets", func(stack awscdk.Stack) exactlyonce.ConsumerProps {
			_, groups := network(stack)
			return exactlyonce.ConsumerProps{Config: on, Instances: &exactlyonce.Instances{SecurityGroups: groups}}
		}, "props.Instances.Subnets must hold 1..16 subnets (where the capacity provider launches instances), got 0"},
		{"no security groups", func(stack awscdk.Stack) exactlyonce.ConsumerProps {
			subnets, _ := network(stack)
			return exactlyonce.ConsumerProps{Config: on, Instances: &exactlyonce.Instances{Subnets: subnets}}
		}, "props.Instances.SecurityGroups must hold 1..5 security groups (the instances' own), got 0"},
		{"six security groups", func(stack awscdk.Stack) exactlyonce.ConsumerProps {
			subnets, groups := network(stack)
			return exactlyonce.ConsumerProps{Config: on, Instances: &exactlyonce.Instances{Subnets: subnets, SecurityGroups: append(groups, groups[0], groups[0], groups[0], groups[0], groups[0])}}
		}, "props.Instances.SecurityGroups must hold 1..5 security groups (the instances' own), got 6"},
		{"too few vCPUs", func(stack awscdk.Stack) exactlyonce.ConsumerProps {
			subnets, groups := network(stack)
			return exactlyonce.ConsumerProps{Config: on, Instances: &exactlyonce.Instances{Subnets: subnets, SecurityGroups: groups, MaxVCPUs: 8}}
		}, "props.Instances.MaxVCPUs must be 0 (the service's default, 400) or in 12..15000, got 8"},
		{"pollers with max concurrency", func(awscdk.Stack) exactlyonce.ConsumerProps {
			return exactlyonce.ConsumerProps{Config: exactlyonce.Config{MaxConcurrency: 10, MaxPollers: 100}}
		}, "MaxConcurrency (10) and provisioned pollers (MinPollers 2, MaxPollers 100) are exclusive"},
		{"too many pollers", func(awscdk.Stack) exactlyonce.ConsumerProps {
			return exactlyonce.ConsumerProps{Config: exactlyonce.Config{MaxPollers: 10000}}
		}, "MaxPollers must be in 2..2000 (an SQS mapping's provisioned maximum), got 10000"},
		{"managed memory", func(stack awscdk.Stack) exactlyonce.ConsumerProps {
			cfg := on
			cfg.MemoryMB = 256
			return exactlyonce.ConsumerProps{Config: cfg, Instances: &exactlyonce.Instances{
				CapacityProvider: awslambda.CapacityProvider_FromCapacityProviderArn(stack, jsii.String("Shared"), jsii.String(sharedProviderARN)),
			}}
		}, "MemoryMB must be in 2048..32768 on Managed Instances"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stack := newStack()
			p := tt.props(stack)
			p.Code = cdktest.Code()
			msg := cdktest.Panics(func() { exactlyonce.NewConsumer(stack, "Orders", &p) })
			if !strings.Contains(msg, `exactlyonce: invalid consumer "Orders"`) || !strings.Contains(msg, tt.want) {
				t.Errorf("NewConsumer panics %q, want it to say %q", msg, tt.want)
			}
		})
	}
}
