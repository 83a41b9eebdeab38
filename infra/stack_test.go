package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
)

// assetDir holds a dummy bootstrap: Code_FromAsset only needs the directory.
var assetDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "infra-assets-")
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "bootstrap"), []byte("dummy"), 0o755)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	assetDir = dir
	code := m.Run() // one jsii runtime (node process) serves every test
	if !raceEnabled {
		// Under -race, skip it: Close races with jsii's own watcher goroutine
		// (see race_test.go); the node process exits when our stdin closes.
		jsii.Close()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// check runs a CDK assertion, which panics on failure, as a test failure.
func check(t *testing.T, what string, assert func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: %v", what, r)
		}
	}()
	assert()
}

func newTestStack(cfg Config) awscdk.Stack {
	return NewStack(awscdk.NewApp(nil), "Test", &StackProps{Config: cfg, ConsumerCode: assetDir, ProducerCode: assetDir})
}

type cfnTemplate struct {
	Resources map[string]struct {
		Type       string
		Properties map[string]any
		Metadata   map[string]any
	}
	Outputs map[string]any
}

func synth(t *testing.T, stack awscdk.Stack) (assertions.Template, cfnTemplate) {
	t.Helper()
	tpl := assertions.Template_FromStack(stack, nil)
	raw, err := json.Marshal(tpl.ToJSON())
	if err != nil {
		t.Fatal(err)
	}
	var parsed cfnTemplate
	if err := json.Unmarshal(raw, &parsed); err != nil {
		t.Fatal(err)
	}
	return tpl, parsed
}

// byType returns the properties of every resource of a type, keyed by logical id.
func (c cfnTemplate) byType(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range c.Resources {
		if r.Type == typ {
			out[id] = r.Properties
		}
	}
	return out
}

// one returns the single resource of a type whose logical id has the prefix.
func (c cfnTemplate) one(t *testing.T, typ, prefix string) map[string]any {
	t.Helper()
	var found []map[string]any
	for id, p := range c.byType(typ) {
		if strings.HasPrefix(id, prefix) {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want exactly one %s with logical id prefix %q, got %d", typ, prefix, len(found))
	}
	return found[0]
}

func num(v any) float64 { f, _ := v.(float64); return f }

func profiles() map[string]Config {
	custom := DefaultConfig()
	custom.FunctionTimeout = 45 * time.Second
	custom.MaxReceiveCount = 7
	custom.MaxConcurrency = 2
	custom.BatchSize = 4
	custom.Mode = ModeTransactional
	return map[string]Config{"default": DefaultConfig(), "test": TestConfig(), "custom45s": custom}
}

// TestStackFollowsConfig: every expectation is computed from the config, so
// it keeps holding when the profiles change.
func TestStackFollowsConfig(t *testing.T) {
	for name, cfg := range profiles() {
		t.Run(name, func(t *testing.T) {
			tpl, c := synth(t, newTestStack(cfg))
			T := cfg.FunctionTimeout.Seconds()

			// Queue: visibility 6T and >= 6x what the template gives the consumer.
			q := c.one(t, "AWS::SQS::Queue", "Queue")
			consumer := c.one(t, "AWS::Lambda::Function", "Consumer")
			if got := num(q["VisibilityTimeout"]); got != 6*T || got < 6*num(consumer["Timeout"]) {
				t.Errorf("VisibilityTimeout = %v, want 6*T = %v and >= 6*consumer Timeout (%v)", got, 6*T, consumer["Timeout"])
			}
			if got := num(consumer["Timeout"]); got != T {
				t.Errorf("consumer Timeout = %v, want %v", got, T)
			}
			check(t, "queue", func() {
				tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
					"VisibilityTimeout":    cfg.VisibilityTimeout().Seconds(),
					"SqsManagedSseEnabled": true,
					"RedrivePolicy":        map[string]any{"maxReceiveCount": cfg.MaxReceiveCount},
				})
			})
			dlq := c.one(t, "AWS::SQS::Queue", "DeadLetterQueue")
			if dlq["SqsManagedSseEnabled"] != true || num(dlq["MessageRetentionPeriod"]) != cfg.DLQRetention.Seconds() {
				t.Errorf("DLQ = %v, want SQS-managed SSE and retention %v", dlq, cfg.DLQRetention)
			}
			check(t, "TLS-only queue policies", func() {
				tpl.ResourcePropertiesCountIs(jsii.String("AWS::SQS::QueuePolicy"), map[string]any{
					"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
						"Effect":    "Deny",
						"Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}},
					})})},
				}, jsii.Number(2))
			})

			check(t, "event source mapping", func() {
				tpl.ResourceCountIs(jsii.String("AWS::Lambda::EventSourceMapping"), jsii.Number(1))
				tpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
					"BatchSize":             cfg.BatchSize,
					"FunctionResponseTypes": []any{"ReportBatchItemFailures"},
					"ScalingConfig":         map[string]any{"MaximumConcurrency": cfg.MaxConcurrency},
				})
			})

			check(t, "idempotency table", func() {
				tpl.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
					"KeySchema":                        []any{map[string]any{"AttributeName": dynamostore.DefaultSchema.PartitionKey, "KeyType": "HASH"}},
					"AttributeDefinitions":             []any{map[string]any{"AttributeName": dynamostore.DefaultSchema.PartitionKey, "AttributeType": "S"}},
					"TimeToLiveSpecification":          map[string]any{"AttributeName": dynamostore.DefaultSchema.TTL, "Enabled": true},
					"BillingMode":                      "PAY_PER_REQUEST",
					"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
				})
			})
			check(t, "ledger table", func() {
				tpl.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
					"KeySchema":                        []any{map[string]any{"AttributeName": "orderId", "KeyType": "HASH"}},
					"BillingMode":                      "PAY_PER_REQUEST",
					"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
				})
			})
			check(t, "removal policy", func() {
				policy := map[awscdk.RemovalPolicy]string{awscdk.RemovalPolicy_RETAIN: "Retain", awscdk.RemovalPolicy_DESTROY: "Delete"}[cfg.RemovalPolicy]
				for _, typ := range []string{"AWS::DynamoDB::Table", "AWS::SQS::Queue", "AWS::Logs::LogGroup"} {
					tpl.AllResources(jsii.String(typ), map[string]any{"DeletionPolicy": policy, "UpdateReplacePolicy": policy})
				}
			})

			check(t, "functions", func() {
				tpl.AllResourcesProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
					"Runtime":       "provided.al2023",
					"Architectures": []any{"arm64"},
					"Handler":       "bootstrap",
					"Timeout":       T,
					"MemorySize":    cfg.MemoryMB,
					"TracingConfig": map[string]any{"Mode": "Active"},
					"LoggingConfig": map[string]any{"LogGroup": assertions.Match_AnyValue()},
				})
				tpl.ResourceCountIs(jsii.String("AWS::Lambda::Function"), jsii.Number(2))
			})
			wantEnv(t, consumer, map[string]string{
				EnvIdemTable: "", EnvLedgerTable: "", EnvNamespace: ConsumerNamespace, EnvMode: cfg.Mode,
				EnvRetention: cfg.ReceiptRetention.String(), EnvSafetyMargin: cfg.SafetyMargin.String(),
				EnvBatchConcurrency: fmt.Sprint(cfg.BatchSize), EnvLogLevel: "INFO",
			})
			wantEnv(t, c.one(t, "AWS::Lambda::Function", "Producer"), map[string]string{
				EnvQueueURL: "", EnvIdemTable: "", EnvNamespace: ProducerNamespace,
				EnvRetention: cfg.ReceiptRetention.String(), EnvSafetyMargin: cfg.SafetyMargin.String(), EnvLogLevel: "INFO",
			})

			for id, a := range c.byType("AWS::CloudWatch::Alarm") {
				if _, ok := a["AlarmActions"]; ok {
					t.Errorf("alarm %s has AlarmActions without AlarmTopicARN: %v", id, a["AlarmActions"])
				}
			}
			check(t, "alarms", func() {
				tpl.ResourceCountIs(jsii.String("AWS::CloudWatch::Alarm"), jsii.Number(3))
				tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
					"MetricName": "ApproximateAgeOfOldestMessage",
					"Threshold":  cfg.BacklogAgeThreshold().Seconds(),
				})
				for _, m := range []string{"ApproximateNumberOfMessagesVisible", "Errors"} {
					tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{"MetricName": m, "Threshold": 0})
				}
			})

			for _, o := range []string{"QueueUrl", "DeadLetterQueueUrl", "IdempotencyTableName", "LedgerTableName", "ProducerFunctionName", "ConsumerFunctionName"} {
				if _, ok := c.Outputs[o]; !ok {
					t.Errorf("missing output %s", o)
				}
			}
		})
	}
}

// wantEnv: exactly these variables; "" means any value (a token).
func wantEnv(t *testing.T, fn map[string]any, want map[string]string) {
	t.Helper()
	vars, _ := fn["Environment"].(map[string]any)["Variables"].(map[string]any)
	var got, exp []string
	for k := range vars {
		got = append(got, k)
	}
	for k, v := range want {
		exp = append(exp, k)
		if s, isString := vars[k].(string); v != "" && (!isString || s != v) {
			t.Errorf("env %s = %v, want %q", k, vars[k], v)
		}
	}
	sort.Strings(got)
	sort.Strings(exp)
	if strings.Join(got, ",") != strings.Join(exp, ",") {
		t.Errorf("env vars = %v, want %v", got, exp)
	}
}

func TestEffectURLOnlyWhenConfigured(t *testing.T) {
	cfg := TestConfig()
	cfg.EffectURL = "https://effect.example/issue"
	_, c := synth(t, newTestStack(cfg))
	vars := c.one(t, "AWS::Lambda::Function", "Consumer")["Environment"].(map[string]any)["Variables"].(map[string]any)
	if vars[EnvEffectURL] != cfg.EffectURL {
		t.Errorf("EFFECT_URL = %v, want %s", vars[EnvEffectURL], cfg.EffectURL)
	}
}

// TestNamespacesDiffer: the functions share the receipt table and the orderId
// key, so one namespace would turn every consumer delivery into a duplicate
// of the producer's receipt.
func TestNamespacesDiffer(t *testing.T) {
	if ConsumerNamespace == "" || ProducerNamespace == "" || ConsumerNamespace == ProducerNamespace {
		t.Fatalf("namespaces consumer=%q producer=%q must be non-empty and differ", ConsumerNamespace, ProducerNamespace)
	}
}

// TestAlarmTopic: with AlarmTopicARN every alarm notifies exactly that topic;
// the topic is imported, so no SNS resource is created.
func TestAlarmTopic(t *testing.T) {
	cfg := TestConfig()
	cfg.AlarmTopicARN = "arn:aws:sns:eu-west-1:123456789012:alarms"
	_, c := synth(t, newTestStack(cfg))
	alarms := c.byType("AWS::CloudWatch::Alarm")
	if len(alarms) != 3 {
		t.Fatalf("want 3 alarms, got %d", len(alarms))
	}
	for id, a := range alarms {
		if got := toStrings(a["AlarmActions"]); len(got) != 1 || got[0] != cfg.AlarmTopicARN {
			t.Errorf("alarm %s: AlarmActions = %v, want [%s]", id, a["AlarmActions"], cfg.AlarmTopicARN)
		}
	}
	for id, r := range c.Resources {
		if strings.HasPrefix(r.Type, "AWS::SNS::") {
			t.Errorf("unexpected SNS resource %s (%s): the topic must be imported", id, r.Type)
		}
	}
}

// TestLeastPrivilege walks every IAM policy and role in the template.
func TestLeastPrivilege(t *testing.T) {
	_, c := synth(t, newTestStack(DefaultConfig()))
	forbidden := map[string]bool{"*": true, "dynamodb:*": true, "sqs:*": true}
	var statements []map[string]any
	collect := func(doc any) {
		d, _ := doc.(map[string]any)
		list, _ := d["Statement"].([]any)
		for _, s := range list {
			statements = append(statements, s.(map[string]any))
		}
	}
	for id, p := range c.byType("AWS::IAM::Policy") {
		if p["PolicyDocument"] == nil {
			t.Errorf("%s: no PolicyDocument", id)
		}
		collect(p["PolicyDocument"])
	}
	for id, p := range c.byType("AWS::IAM::Role") {
		if arns, ok := p["ManagedPolicyArns"]; ok {
			raw, _ := json.Marshal(arns)
			if strings.Contains(string(raw), "FullAccess") {
				t.Errorf("%s: FullAccess managed policy: %s", id, raw)
			}
			// The design uses none at all; logs go to the function's own group.
			t.Errorf("%s: unexpected managed policies %s", id, raw)
		}
		policies, _ := p["Policies"].([]any)
		for _, pol := range policies {
			collect(pol.(map[string]any)["PolicyDocument"])
		}
	}
	if len(statements) == 0 {
		t.Fatal("no IAM statements found")
	}
	// DynamoDB actions are pinned per table: receipts need GetItem and
	// UpdateItem only (no PutItem), the ledger UpdateItem only.
	wantDynamo := map[string]string{
		"IdempotencyTable": "dynamodb:GetItem,dynamodb:UpdateItem",
		"LedgerTable":      "dynamodb:UpdateItem",
	}
	grants := map[string]int{}
	for _, s := range statements {
		var dyn []string
		for _, a := range toStrings(s["Action"]) {
			if strings.HasPrefix(a, "dynamodb:") {
				dyn = append(dyn, a)
			}
		}
		if len(dyn) == 0 {
			continue
		}
		sort.Strings(dyn)
		raw, _ := json.Marshal(s["Resource"])
		matched := false
		for table, want := range wantDynamo {
			if strings.Contains(string(raw), table) {
				matched = true
				grants[table]++
				if got := strings.Join(dyn, ","); got != want {
					t.Errorf("%s actions = %s, want %s", table, got, want)
				}
			}
		}
		if !matched {
			t.Errorf("dynamodb actions %v on unexpected resource %s", dyn, raw)
		}
	}
	// Idempotency table: consumer and producer; ledger: consumer only.
	if grants["IdempotencyTable"] != 2 || grants["LedgerTable"] != 1 {
		t.Errorf("dynamodb grant statements per table = %v, want IdempotencyTable:2 LedgerTable:1", grants)
	}
	for _, s := range statements {
		actions := toStrings(s["Action"])
		for _, a := range actions {
			if forbidden[a] {
				t.Errorf("statement %v has forbidden action %q", s, a)
			}
		}
		// The only resource wildcard allowed is X-Ray's (no resource-level permissions).
		if s["Effect"] == "Allow" && s["Resource"] == "*" {
			for _, a := range actions {
				if !strings.HasPrefix(a, "xray:") {
					t.Errorf("action %q granted on Resource *", a)
				}
			}
		}
	}
}

func toStrings(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, x := range v {
			out = append(out, fmt.Sprint(x))
		}
		return out
	}
	return nil
}
