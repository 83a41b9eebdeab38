//lint:file-ignore SA1019 assertions.Annotations returns cxapi.SynthesisMessage, deprecated in favour of a type the Go bindings do not offer.

package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/exactlyonce/sqsidem/infra/exactlyonce/cdktest"
)

// TestNagClean: the AwsSolutions and Serverless packs report nothing that is
// not suppressed (with a reason) in the code itself, in every profile.
func TestNagClean(t *testing.T) {
	withTopic := deployed(DefaultConfig())
	withTopic.AlarmTopicARN = "arn:aws:sns:eu-west-1:123456789012:alarms"
	for name, cfg := range map[string]Config{
		"default": deployed(DefaultConfig()), "test": TestConfig(), "hardened": deployed(HardenedConfig()), "alarmTopic": withTopic,
	} {
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
	for _, cfg := range []Config{deployed(DefaultConfig()), deployed(HardenedConfig())} {
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

// TestNagTracingDisabled: with Config.Tracing disabled neither function is
// traced, neither role has X-Ray's Resource '*', so the X-Ray suppression
// is gone too, and nag's only finding is Serverless-LambdaTracing on each
// function: the choice the app made, not suppressed on its behalf.
func TestNagTracingDisabled(t *testing.T) {
	cfg := deployed(DefaultConfig())
	cfg.Tracing = awslambda.Tracing_DISABLED
	stack := newTestStack(cfg)
	ApplyNag(stack)
	tpl := cdktest.Synth(t, stack)
	for id, fn := range tpl.ByType("AWS::Lambda::Function") {
		if v, ok := fn["TracingConfig"]; ok {
			t.Errorf("%s: TracingConfig = %v, want none", id, v)
		}
	}
	for id, r := range tpl.Resources {
		if strings.Contains(cdktest.JSON(r.Properties), "xray:") {
			t.Errorf("%s grants X-Ray actions without tracing", id)
		}
		if strings.Contains(cdktest.JSON(r.Metadata), "AwsSolutions-IAM5") {
			t.Errorf("%s: AwsSolutions-IAM5 suppressed, with nothing left to suppress", id)
		}
	}
	found := cdktest.NagFindings(stack)
	want := []string{
		"Serverless-LambdaTracing at /Test/Default/Consumer/Resource",
		"Serverless-LambdaTracing at /Test/Producer/Resource",
	}
	if !slices.Equal(found, want) {
		t.Errorf("nag findings = %q, want %q", found, want)
	}
}
