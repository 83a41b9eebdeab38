//lint:file-ignore SA1019 assertions.Annotations returns cxapi.SynthesisMessage, deprecated in favour of a type the Go bindings do not offer.

package exactlyonce_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/exactlyonce/sqsidem/infra/exactlyonce"
	"github.com/exactlyonce/sqsidem/infra/exactlyonce/cdktest"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// TestNagClean: with ConsumerProps.Nag, a consumer synthesizes without a
// finding the construct has not suppressed with its reason, in the
// configurations a team chooses among.
func TestNagClean(t *testing.T) {
	for name, props := range map[string]func(awscdk.Stack) exactlyonce.ConsumerProps{
		"defaults": func(awscdk.Stack) exactlyonce.ConsumerProps { return exactlyonce.ConsumerProps{} },
		"transactional, key, alarm topic": func(awscdk.Stack) exactlyonce.ConsumerProps {
			return exactlyonce.ConsumerProps{Config: exactlyonce.Config{
				Mode: consumer.ModeTransactional, Key: "paymentId", AlarmTopicARN: "arn:aws:sns:eu-west-1:123456789012:alarms",
			}}
		},
		"customer-managed key": func(stack awscdk.Stack) exactlyonce.ConsumerProps {
			return exactlyonce.ConsumerProps{EncryptionKey: exactlyonce.NewKey(stack, "Key", awscdk.RemovalPolicy_DESTROY)}
		},
		"secrets and environment": func(stack awscdk.Stack) exactlyonce.ConsumerProps {
			return exactlyonce.ConsumerProps{
				Environment: map[string]*string{"SMS_URL": jsii.String("https://sms.example/v1")},
				Secrets: map[string]awssecretsmanager.ISecret{
					"SMS_TOKEN": awssecretsmanager.Secret_FromSecretNameV2(stack, jsii.String("Token"), jsii.String("sms-token")),
				},
			}
		},
		"provisioned pollers": func(awscdk.Stack) exactlyonce.ConsumerProps {
			return exactlyonce.ConsumerProps{Config: exactlyonce.Config{MinPollers: 10, MaxPollers: 100}}
		},
		// The VPC is the app's (outside the consumer, not checked here).
		"managed instances, created capacity provider": func(stack awscdk.Stack) exactlyonce.ConsumerProps {
			subnets, groups := network(stack)
			return exactlyonce.ConsumerProps{
				Config:    exactlyonce.Config{ManagedInstances: exactlyonce.ManagedInstances{Concurrency: 8}},
				Instances: &exactlyonce.Instances{Subnets: subnets, SecurityGroups: groups},
			}
		},
		"managed instances, customer-managed key": func(stack awscdk.Stack) exactlyonce.ConsumerProps {
			subnets, groups := network(stack)
			return exactlyonce.ConsumerProps{
				Config:        exactlyonce.Config{ManagedInstances: exactlyonce.ManagedInstances{Concurrency: 8}},
				Instances:     &exactlyonce.Instances{Subnets: subnets, SecurityGroups: groups},
				EncryptionKey: exactlyonce.NewKey(stack, "Key", awscdk.RemovalPolicy_DESTROY),
			}
		},
		"managed instances, existing capacity provider, pollers": func(stack awscdk.Stack) exactlyonce.ConsumerProps {
			return exactlyonce.ConsumerProps{
				Config: exactlyonce.Config{ManagedInstances: exactlyonce.ManagedInstances{Concurrency: 8}, MaxPollers: 20},
				Instances: &exactlyonce.Instances{
					CapacityProvider: awslambda.CapacityProvider_FromCapacityProviderArn(stack, jsii.String("Shared"), jsii.String(sharedProviderARN)),
				},
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			stack := newStack()
			p := props(stack)
			p.Code, p.Nag = cdktest.Code(), true
			exactlyonce.NewConsumer(stack, "Orders", &p)
			if found := cdktest.NagFindings(stack); len(found) > 0 {
				t.Errorf("cdk-nag findings: %q", found)
			}
		})
	}
}

// TestNagRunsThePacks: the option is what runs the packs, on the
// construct's subtree only. A queue added under the consumer (no DLQ, no
// TLS-only policy) is reported with Nag and not without it; the same
// queue beside the consumer in the stack is the app's, never reported by
// the consumer's packs.
func TestNagRunsThePacks(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("Nag=%v", on), func(t *testing.T) {
			stack := newStack()
			c := exactlyonce.NewConsumer(stack, "Orders", &exactlyonce.ConsumerProps{Code: cdktest.Code(), Nag: on})
			awssqs.NewQueue(c, jsii.String("Inside"), nil)
			awssqs.NewQueue(stack, jsii.String("Outside"), nil)
			found := cdktest.NagFindings(stack)
			var want []string
			if on {
				want = []string{
					"AwsSolutions-SQS3 at /Test/Orders/Inside/Resource",
					"AwsSolutions-SQS4 at /Test/Orders/Inside/Resource",
					"Serverless-SQSRedrivePolicy at /Test/Orders/Inside/Resource",
				}
			}
			if !slices.Equal(found, want) {
				t.Errorf("cdk-nag findings = %q, want %q", found, want)
			}
		})
	}
}

// TestNagTracing: a Tracing other than Active is the team's choice, left
// visible: the Serverless pack reports it, and only it.
func TestNagTracing(t *testing.T) {
	stack := newStack()
	exactlyonce.NewConsumer(stack, "Orders", &exactlyonce.ConsumerProps{
		Code: cdktest.Code(), Nag: true, Config: exactlyonce.Config{Tracing: awslambda.Tracing_PASS_THROUGH},
	})
	want := []string{"Serverless-LambdaTracing at /Test/Orders/Consumer/Resource"}
	if found := cdktest.NagFindings(stack); !slices.Equal(found, want) {
		t.Errorf("cdk-nag findings = %q, want %q", found, want)
	}
}

// TestNagReasonsNameNoExample: the construct goes into any team's stack;
// its suppressions' reasons speak of the consumer, never of one of this
// repository's applications.
func TestNagReasonsNameNoExample(t *testing.T) {
	stack := newStack()
	exactlyonce.NewConsumer(stack, "Orders", &exactlyonce.ConsumerProps{
		Code: cdktest.Code(), EncryptionKey: exactlyonce.NewKey(stack, "Key", awscdk.RemovalPolicy_DESTROY),
	})
	n := 0
	for id, r := range cdktest.Synth(t, stack).Resources {
		nag, _ := r.Metadata["cdk_nag"].(map[string]any)
		rules, _ := nag["rules_to_suppress"].([]any)
		for _, rule := range rules {
			n++
			m := rule.(map[string]any)
			reason := strings.ToLower(fmt.Sprint(m["reason"]))
			for _, word := range []string{"order", "gift", "booking", "hotel", "reminder", "partner"} {
				if strings.Contains(reason, word) {
					t.Errorf("%s: the reason for %s speaks of %q: %q", id, m["id"], word, m["reason"])
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no suppression found")
	}
}
