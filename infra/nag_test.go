//lint:file-ignore SA1019 assertions.Annotations returns cxapi.SynthesisMessage, deprecated in favour of a type the Go bindings do not offer.

package main

import (
	"fmt"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/exactlyonce/sqsidem/infra/internal/cdktest"
)

// TestNagClean: the AwsSolutions and Serverless packs report nothing that is
// not suppressed (with a reason) in the code itself, in every profile.
func TestNagClean(t *testing.T) {
	withTopic := DefaultConfig()
	withTopic.AlarmTopicARN = "arn:aws:sns:eu-west-1:123456789012:alarms"
	for name, cfg := range map[string]Config{"default": DefaultConfig(), "test": TestConfig(), "hardened": HardenedConfig(), "alarmTopic": withTopic} {
		t.Run(name, func(t *testing.T) {
			stack := newTestStack(cfg)
			ApplyNag(stack)
			ann := assertions.Annotations_FromStack(stack)
			for _, pack := range []string{"AwsSolutions-.*", "Serverless-.*"} {
				match := assertions.Match_StringLikeRegexp(jsii.String(pack))
				for _, m := range *ann.FindError(jsii.String("*"), match) {
					t.Errorf("nag error at %s: %v", *m.Id, m.Entry.Data)
				}
				for _, m := range *ann.FindWarning(jsii.String("*"), match) {
					t.Errorf("nag warning at %s: %v", *m.Id, m.Entry.Data)
				}
			}
		})
	}
}

// TestNagSuppressionsHaveReasons lists every suppression in the template and
// requires a real reason; the set is pinned so a new one is a visible change.
// The hardened profile needs no suppression of its own.
func TestNagSuppressionsHaveReasons(t *testing.T) {
	for _, cfg := range []Config{DefaultConfig(), HardenedConfig()} {
		tpl := cdktest.Synth(t, newTestStack(cfg))
		want := map[string]bool{
			"AwsSolutions-IAM5":                              true, // X-Ray on both roles
			"Serverless-SQSRedrivePolicy":                    true, // the DLQ itself
			"Serverless-LambdaDLQ":                           true, // both functions
			"Serverless-LambdaEventSourceMappingDestination": true, // the SQS mapping
		}
		got := map[string]bool{}
		for id, r := range tpl.Resources {
			nag, _ := r.Metadata["cdk_nag"].(map[string]any)
			rules, _ := nag["rules_to_suppress"].([]any)
			for _, rule := range rules {
				m := rule.(map[string]any)
				rid, reason := fmt.Sprint(m["id"]), fmt.Sprint(m["reason"])
				got[rid] = true
				if len(reason) < 10 {
					t.Errorf("%s: suppression %s has no real reason: %q", id, rid, reason)
				}
				if rid == "AwsSolutions-IAM5" && fmt.Sprint(m["applies_to"]) != "[Resource::*]" {
					t.Errorf("%s: IAM5 suppression must be limited to Resource::*, got %v", id, m["applies_to"])
				}
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("suppressions = %v, want %v", got, want)
		}
	}
}
