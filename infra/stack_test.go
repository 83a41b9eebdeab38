package main

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/infra/exactlyonce/cdktest"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

func TestMain(m *testing.M) { cdktest.Main(m) }

func newTestStack(cfg Config) awscdk.Stack {
	return NewStack(awscdk.NewApp(nil), "Test", &StackProps{Config: cfg, ConsumerCode: cdktest.AssetDir(), ProducerCode: cdktest.AssetDir()})
}

func profiles() map[string]Config {
	custom := DefaultConfig()
	custom.FunctionTimeout = 45 * time.Second
	custom.MaxReceiveCount = 7
	custom.MaxConcurrency = 2
	custom.BatchSize = 4
	custom.Mode, custom.UnknownOutcome = consumer.ModeTransactional, unknownOutcomeIn(consumer.ModeTransactional)
	// The policy of lease mode (transactional mode refuses it), whatever
	// the app's mode (a fork's may be transactional).
	hold := DefaultConfig()
	hold.Mode, hold.UnknownOutcome = consumer.ModeLease, consumer.UnknownHold
	hold = deployed(hold)
	return map[string]Config{
		"default": deployed(DefaultConfig()), "test": TestConfig(), "hardened": deployed(HardenedConfig()), "custom45s": custom, "hold": hold,
	}
}

// TestLogicalIDsKept: the resources of a stack deployed before the consumer
// became a construct keep their logical ids, so an update changes them in
// place (replacing the retained receipt table would forget every receipt).
// These ids do not depend on the stack name.
func TestLogicalIDsKept(t *testing.T) {
	tpl := cdktest.Synth(t, newTestStack(deployed(DefaultConfig())))
	for _, id := range []string{
		"Queue4A7E3555", "DeadLetterQueue9F481546", "IdempotencyTable22A5A209",
		"Consumer8D6BE417", "ProducerD8AA94EB", "RoleConsumerEE6CF284", "RoleProducer23335CCC",
		"LogGroupConsumerE2042FED", "LogGroupProducer4030BF39",
		"AlarmDeadLetterQueueNotEmpty6F59908C", "AlarmQueueBacklogAge1787B9D5", "AlarmConsumerErrors4BDAA235",
	} {
		if _, ok := tpl.Resources[id]; !ok {
			t.Errorf("logical id %s is gone: a deployed stack would replace that resource", id)
		}
	}
	for _, tb := range contract.EffectTables {
		tpl.One(t, "AWS::DynamoDB::Table", tableID(tb.Env)) // LedgerTable38A58B60 for the template's ledger
	}
}

// TestApp: the app around the construct (the effect's tables, producer, outputs)
// in every profile; the construct's own resources are tested in exactlyonce.
func TestApp(t *testing.T) {
	for name, cfg := range profiles() {
		t.Run(name, func(t *testing.T) {
			tpl := cdktest.Synth(t, newTestStack(cfg))
			// The integration suite finds resources by these prefixes.
			for typ, prefixes := range map[string][]string{
				"AWS::SQS::Queue":       {"Queue", "DeadLetterQueue"},
				"AWS::DynamoDB::Table":  {"IdempotencyTable"},
				"AWS::Lambda::Function": {"Consumer", "Producer"},
			} {
				for _, p := range prefixes {
					tpl.One(t, typ, p)
				}
			}
			effectEnv := map[string]string{}
			for _, tb := range contract.EffectTables {
				table := tpl.One(t, "AWS::DynamoDB::Table", tableID(tb.Env))
				if got := cdktest.JSON(table["KeySchema"]); !strings.Contains(got, `"AttributeName":"`+tb.PartitionKey+`"`) ||
					table["BillingMode"] != "PAY_PER_REQUEST" {
					t.Errorf("table %s: key schema %s, billing %v", tb.Env, got, table["BillingMode"])
				}
				effectEnv[tb.Env] = ""
			}
			cdktest.Check(t, "functions", func() {
				tpl.ResourceCountIs(jsii.String("AWS::Lambda::Function"), jsii.Number(2))
				tpl.AllResourcesProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
					"Runtime": "provided.al2023", "Architectures": []any{"arm64"}, "Timeout": cfg.FunctionTimeout.Seconds(),
					"MemorySize": cfg.MemoryMB, "TracingConfig": map[string]any{"Mode": "Active"},
				})
			})
			consumerFn := tpl.One(t, "AWS::Lambda::Function", "Consumer")
			maps.Copy(effectEnv, cfg.Effect)
			maps.Copy(effectEnv, map[string]string{
				consumer.EnvTable: "", consumer.EnvNamespace: Namespace, consumer.EnvMode: cfg.Mode, consumer.EnvKey: contract.KeyField,
				consumer.EnvRetention: cfg.ReceiptRetention.String(), consumer.EnvSafetyMargin: cfg.SafetyMargin.String(),
				consumer.EnvBatchConcurrency: fmt.Sprint(cfg.BatchSize), consumer.EnvMaxReceiveCount: fmt.Sprint(cfg.MaxReceiveCount),
				consumer.EnvLogLevel: "INFO", consumer.EnvUnknownOutcome: cfg.UnknownOutcome,
				consumer.EnvVisibilityTimeout: cfg.VisibilityTimeout().String(),
			})
			wantEnv(t, consumerFn, effectEnv)
			producer := tpl.One(t, "AWS::Lambda::Function", "Producer")
			wantEnv(t, producer, map[string]string{
				contract.EnvQueueURL: "", consumer.EnvTable: "", consumer.EnvNamespace: contract.ProducerNamespace,
				consumer.EnvRetention: cfg.ReceiptRetention.String(), consumer.EnvSafetyMargin: cfg.SafetyMargin.String(), consumer.EnvLogLevel: "INFO",
			})
			if got := cdktest.JSON(cdktest.Env(producer)[consumer.EnvTable]); got != cdktest.JSON(cdktest.Env(consumerFn)[consumer.EnvTable]) {
				t.Errorf("producer and consumer must share the receipt table: %s", got)
			}
			outputs := []string{
				consumer.OutputQueueURL, consumer.OutputDeadLetterQueueURL, consumer.OutputTable, consumer.OutputFunctionName,
				consumer.OutputNamespace, consumer.OutputKey, contract.OutputProducerFunctionName,
			}
			for _, tb := range contract.EffectTables {
				outputs = append(outputs, tableID(tb.Env)+"Name")
			}
			if got, want := slices.Sorted(maps.Keys(tpl.Outputs)), slices.Sorted(slices.Values(outputs)); !slices.Equal(got, want) {
				t.Errorf("outputs %v, want %v", got, want)
			}
			for _, d := range tpl.ByType("AWS::CloudWatch::Dashboard") {
				if body := cdktest.JSON(d["DashboardBody"]); !strings.Contains(body, `Producer: errors and throttles`) {
					t.Error("the dashboard has no producer row")
				}
			}
		})
	}
}

// wantEnv: exactly these variables; "" means any value (a token).
func wantEnv(t *testing.T, fn map[string]any, want map[string]string) {
	t.Helper()
	vars := cdktest.Env(fn)
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

// TestHardened: one customer-managed key encrypts everything that stores
// data, in the construct and around it, and both functions reserve
// concurrency; the default profile has neither (TestApp, exactlyonce).
func TestHardened(t *testing.T) {
	cfg := deployed(HardenedConfig())
	tpl := cdktest.Synth(t, newTestStack(cfg))
	keys := tpl.ByType("AWS::KMS::Key")
	if len(keys) != 1 {
		t.Fatalf("want one KMS key, got %d", len(keys))
	}
	var keyArn map[string]any
	for id, k := range keys {
		keyArn = map[string]any{"Fn::GetAtt": []any{id, "Arn"}}
		if k["EnableKeyRotation"] != true {
			t.Error("key rotation must be on")
		}
	}
	cdktest.Check(t, "encryption", func() {
		tpl.AllResourcesProperties(jsii.String("AWS::SQS::Queue"), map[string]any{"KmsMasterKeyId": keyArn})
		tpl.AllResourcesProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{"SSESpecification": map[string]any{"KMSMasterKeyId": keyArn, "SSEEnabled": true, "SSEType": "KMS"}})
		tpl.AllResourcesProperties(jsii.String("AWS::Logs::LogGroup"), map[string]any{"KmsKeyId": keyArn})
		tpl.AllResourcesProperties(jsii.String("AWS::Lambda::Function"), map[string]any{"KmsKeyArn": keyArn})
	})
	if got := cdktest.Num(tpl.One(t, "AWS::Lambda::Function", "Consumer")["ReservedConcurrentExecutions"]); got != float64(cfg.ReservedConcurrency) {
		t.Errorf("consumer reserved concurrency = %v, want %d", got, cfg.ReservedConcurrency)
	}
	if got := cdktest.Num(tpl.One(t, "AWS::Lambda::Function", "Producer")["ReservedConcurrentExecutions"]); got != float64(cfg.ProducerReservedConcurrency) {
		t.Errorf("producer reserved concurrency = %v, want %d", got, cfg.ProducerReservedConcurrency)
	}
}

// TestEffectSettingsReachTheConsumer: a value of the effect's settings
// (contract.EffectSettings) is set on the consumer as it is.
func TestEffectSettingsReachTheConsumer(t *testing.T) {
	cfg := TestConfig()
	for _, s := range contract.EffectSettings {
		if v := "https://effect.example/" + s.Env; (s.Valid == nil || s.Valid(v)) && (s.Modes == nil || slices.Contains(s.Modes, cfg.Mode)) {
			cfg.Effect[s.Env] = v
		}
	}
	if len(cfg.Effect) == 0 {
		t.Skip("the effect has no setting this test can give a value")
	}
	vars := cdktest.Env(cdktest.Synth(t, newTestStack(cfg)).One(t, "AWS::Lambda::Function", "Consumer"))
	for name, v := range cfg.Effect {
		if vars[name] != v {
			t.Errorf("%s = %v, want %s", name, vars[name], v)
		}
	}
}

// TestLeastPrivilege walks every IAM policy and role in the template.
func TestLeastPrivilege(t *testing.T) {
	for _, name := range []string{"default", "hardened"} {
		t.Run(name, func(t *testing.T) {
			leastPrivilege(t, cdktest.Synth(t, newTestStack(profiles()[name])))
		})
	}
}

func leastPrivilege(t *testing.T, tpl cdktest.Template) {
	forbidden := map[string]bool{"*": true, "dynamodb:*": true, "sqs:*": true, "kms:*": true}
	var statements []map[string]any
	collect := func(doc any) {
		d, _ := doc.(map[string]any)
		list, _ := d["Statement"].([]any)
		for _, s := range list {
			statements = append(statements, s.(map[string]any))
		}
	}
	for id, p := range tpl.ByType("AWS::IAM::Policy") {
		if p["PolicyDocument"] == nil {
			t.Errorf("%s: no PolicyDocument", id)
		}
		collect(p["PolicyDocument"])
	}
	for id, p := range tpl.ByType("AWS::IAM::Role") {
		if arns, ok := p["ManagedPolicyArns"]; ok {
			// The design uses none at all; logs go to the function's own group.
			t.Errorf("%s: unexpected managed policies %s", id, cdktest.JSON(arns))
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
	wantDynamo := map[string]string{"IdempotencyTable": "dynamodb:GetItem,dynamodb:UpdateItem"}
	wantGrants := map[string]int{"IdempotencyTable": 2} // consumer and producer
	for _, tb := range contract.EffectTables {
		wantDynamo[tableID(tb.Env)] = strings.Join(slices.Sorted(slices.Values(tb.Actions)), ",")
		wantGrants[tableID(tb.Env)] = 1 // the consumer
	}
	grants := map[string]int{}
	for _, s := range statements {
		var dyn []string
		for _, a := range cdktest.Strings(s["Action"]) {
			if strings.HasPrefix(a, "dynamodb:") {
				dyn = append(dyn, a)
			}
		}
		if len(dyn) == 0 {
			continue
		}
		sort.Strings(dyn)
		raw := cdktest.JSON(s["Resource"])
		matched := false
		for table, want := range wantDynamo {
			if strings.Contains(raw, table) {
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
	if !maps.Equal(grants, wantGrants) {
		t.Errorf("dynamodb grant statements per table = %v, want %v", grants, wantGrants)
	}
	for _, s := range statements {
		actions := cdktest.Strings(s["Action"])
		for _, a := range actions {
			if forbidden[a] {
				t.Errorf("statement %v has forbidden action %q", s, a)
			}
			// KMS actions only ever on the one key.
			if strings.HasPrefix(a, "kms:") && !strings.Contains(cdktest.JSON(s["Resource"]), `"Fn::GetAtt":["Key`) {
				t.Errorf("KMS action %s on %s, want the stack's key", a, cdktest.JSON(s["Resource"]))
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

// TestAlarmTopic: the app passes AlarmTopicARN to the consumer's alarms.
func TestAlarmTopic(t *testing.T) {
	cfg := TestConfig()
	cfg.AlarmTopicARN = "arn:aws:sns:eu-west-1:123456789012:alarms"
	tpl := cdktest.Synth(t, newTestStack(cfg))
	cdktest.Check(t, "alarm actions", func() {
		tpl.ResourceCountIs(jsii.String("AWS::CloudWatch::Alarm"), jsii.Number(8))
		tpl.AllResourcesProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{"AlarmActions": []any{cfg.AlarmTopicARN}})
		tpl.ResourceCountIs(jsii.String("AWS::SNS::Topic"), jsii.Number(0))
	})
}
