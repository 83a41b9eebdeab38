package exactlyonce_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/exactlyonce/sqsidem/infra/exactlyonce"
	"github.com/exactlyonce/sqsidem/infra/exactlyonce/cdktest"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
)

func TestMain(m *testing.M) { cdktest.Main(m) }

func newStack() awscdk.Stack {
	return awscdk.NewStack(awscdk.NewApp(nil), jsii.String("Test"), nil)
}

// synthConsumer synthesizes a stack holding one consumer "Orders".
func synthConsumer(t *testing.T, props exactlyonce.ConsumerProps) (*exactlyonce.Consumer, cdktest.Template) {
	t.Helper()
	stack := newStack()
	if props.Code == nil {
		props.Code = cdktest.Code()
	}
	c := exactlyonce.NewConsumer(stack, "Orders", &props)
	return c, cdktest.Synth(t, stack)
}

// TestConsumerFollowsConfig: every expectation is computed from the
// config, so it keeps holding when the defaults change.
func TestConsumerFollowsConfig(t *testing.T) {
	custom := exactlyonce.Config{
		FunctionTimeout: 45 * time.Second, MaxReceiveCount: 7, MaxConcurrency: 2, BatchSize: 4,
		Mode: consumer.ModeTransactional, Namespace: "gift-cards", RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	}
	hold := exactlyonce.Config{UnknownOutcome: consumer.UnknownHold}
	for name, in := range map[string]exactlyonce.Config{"zero (defaults)": {}, "custom": custom, "hold": hold} {
		t.Run(name, func(t *testing.T) {
			c, tpl := synthConsumer(t, exactlyonce.ConsumerProps{Config: in})
			cfg := in.WithDefaults()
			if c.Config != cfg {
				t.Errorf("Consumer.Config = %+v, want %+v", c.Config, cfg)
			}
			T := cfg.FunctionTimeout.Seconds()

			// The construct id prefixes every logical id, so two consumers
			// can share a stack and the integration suite finds them.
			q := tpl.One(t, "AWS::SQS::Queue", "OrdersQueue")
			fn := tpl.One(t, "AWS::Lambda::Function", "OrdersConsumer")
			if got := cdktest.Num(q["VisibilityTimeout"]); got != 6*T || got < 6*cdktest.Num(fn["Timeout"]) {
				t.Errorf("VisibilityTimeout = %v, want 6*T = %v and >= 6*function Timeout (%v)", got, 6*T, fn["Timeout"])
			}
			cdktest.Check(t, "queue", func() {
				tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
					"VisibilityTimeout":      cfg.VisibilityTimeout().Seconds(),
					"MessageRetentionPeriod": cfg.QueueRetention.Seconds(),
					"SqsManagedSseEnabled":   true,
					"RedrivePolicy":          map[string]any{"maxReceiveCount": cfg.MaxReceiveCount},
				})
			})
			dlq := tpl.One(t, "AWS::SQS::Queue", "OrdersDeadLetterQueue")
			if dlq["SqsManagedSseEnabled"] != true || cdktest.Num(dlq["MessageRetentionPeriod"]) != cfg.DLQRetention.Seconds() {
				t.Errorf("DLQ = %v, want SQS-managed SSE and retention %v", dlq, cfg.DLQRetention)
			}
			cdktest.Check(t, "TLS-only queue policies", func() {
				tpl.ResourcePropertiesCountIs(jsii.String("AWS::SQS::QueuePolicy"), map[string]any{
					"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
						"Effect":    "Deny",
						"Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}},
					})})},
				}, jsii.Number(2))
			})
			cdktest.Check(t, "event source mapping", func() {
				tpl.ResourceCountIs(jsii.String("AWS::Lambda::EventSourceMapping"), jsii.Number(1))
				tpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
					"BatchSize":             cfg.BatchSize,
					"FunctionResponseTypes": []any{"ReportBatchItemFailures"},
					"ScalingConfig":         map[string]any{"MaximumConcurrency": cfg.MaxConcurrency},
				})
			})
			cdktest.Check(t, "receipt table", func() {
				tpl.ResourceCountIs(jsii.String("AWS::DynamoDB::Table"), jsii.Number(1))
				tpl.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
					"KeySchema":                        []any{map[string]any{"AttributeName": dynamostore.DefaultSchema.PartitionKey, "KeyType": "HASH"}},
					"AttributeDefinitions":             []any{map[string]any{"AttributeName": dynamostore.DefaultSchema.PartitionKey, "AttributeType": "S"}},
					"TimeToLiveSpecification":          map[string]any{"AttributeName": dynamostore.DefaultSchema.TTL, "Enabled": true},
					"BillingMode":                      "PAY_PER_REQUEST",
					"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
					"SSESpecification":                 assertions.Match_Absent(),
				})
			})
			cdktest.Check(t, "removal policy", func() {
				policy := map[awscdk.RemovalPolicy]string{awscdk.RemovalPolicy_RETAIN: "Retain", awscdk.RemovalPolicy_DESTROY: "Delete"}[cfg.RemovalPolicy]
				for _, typ := range []string{"AWS::DynamoDB::Table", "AWS::SQS::Queue", "AWS::Logs::LogGroup"} {
					tpl.AllResources(jsii.String(typ), map[string]any{"DeletionPolicy": policy, "UpdateReplacePolicy": policy})
				}
			})
			cdktest.Check(t, "function", func() {
				tpl.ResourceCountIs(jsii.String("AWS::Lambda::Function"), jsii.Number(1))
				tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
					"Runtime":                      "provided.al2023",
					"Architectures":                []any{"arm64"},
					"Handler":                      "bootstrap",
					"Timeout":                      T,
					"MemorySize":                   cfg.MemoryMB,
					"TracingConfig":                map[string]any{"Mode": "Active"},
					"LoggingConfig":                map[string]any{"LogGroup": assertions.Match_AnyValue()},
					"ReservedConcurrentExecutions": assertions.Match_Absent(),
					"KmsKeyArn":                    assertions.Match_Absent(),
				})
				tpl.HasResourceProperties(jsii.String("AWS::Logs::LogGroup"), map[string]any{
					"RetentionInDays": 30, "KmsKeyId": assertions.Match_Absent(),
				})
			})
			wantEnv(t, fn, map[string]string{
				consumer.EnvTable: "", consumer.EnvNamespace: cfg.Namespace, consumer.EnvMode: cfg.Mode,
				consumer.EnvUnknownOutcome: cfg.UnknownOutcome, consumer.EnvRetention: cfg.ReceiptRetention.String(), consumer.EnvSafetyMargin: cfg.SafetyMargin.String(),
				consumer.EnvBatchConcurrency: fmt.Sprint(cfg.BatchSize), consumer.EnvMaxReceiveCount: fmt.Sprint(cfg.MaxReceiveCount),
				consumer.EnvVisibilityTimeout: cfg.VisibilityTimeout().String(), consumer.EnvLogLevel: "INFO",
			})
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

func TestEnvironment(t *testing.T) {
	_, tpl := synthConsumer(t, exactlyonce.ConsumerProps{Environment: map[string]*string{
		"PAYMENTS_TABLE": jsii.String("payments"), consumer.EnvLogLevel: jsii.String("DEBUG"),
	}})
	vars := cdktest.Env(tpl.One(t, "AWS::Lambda::Function", "OrdersConsumer"))
	if vars["PAYMENTS_TABLE"] != "payments" || vars[consumer.EnvLogLevel] != "DEBUG" || vars[consumer.EnvMode] != consumer.ModeLease {
		t.Errorf("env = %v, want the caller's PAYMENTS_TABLE and LOG_LEVEL beside the derived variables", vars)
	}
}

// TestInvalidPropsPanic: one panic lists every problem, like Validate.
func TestInvalidPropsPanic(t *testing.T) {
	msg := cdktest.Panics(func() {
		exactlyonce.NewConsumer(newStack(), "Orders", &exactlyonce.ConsumerProps{
			Config:      exactlyonce.Config{BatchSize: 11, ReservedConcurrency: 1},
			Environment: map[string]*string{consumer.EnvTable: jsii.String("mine"), consumer.EnvMode: jsii.String(consumer.ModeLease), "OK": jsii.String("x")},
		})
	})
	for _, want := range []string{`invalid consumer "Orders"`, "BatchSize must be in 1..10", "ReservedConcurrency (1)", "props.Code or props.Main is required",
		"props.Environment must not set IDEM_MODE, IDEM_TABLE"} {
		if !strings.Contains(msg, want) {
			t.Errorf("panic %q does not mention %q", msg, want)
		}
	}
}

func TestReservedConcurrency(t *testing.T) {
	_, tpl := synthConsumer(t, exactlyonce.ConsumerProps{Config: exactlyonce.Config{MaxConcurrency: 8, ReservedConcurrency: 8}})
	cdktest.Check(t, "reserved concurrency", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{"ReservedConcurrentExecutions": 8})
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{"ScalingConfig": map[string]any{"MaximumConcurrency": 8}})
	})
}

// TestTwoConsumers: the construct is reusable; two in one stack keep
// apart (names, namespaces, metrics).
func TestTwoConsumers(t *testing.T) {
	stack := newStack()
	a := exactlyonce.NewConsumer(stack, "Orders", &exactlyonce.ConsumerProps{Code: cdktest.Code()})
	b := exactlyonce.NewConsumer(stack, "Refunds", &exactlyonce.ConsumerProps{Code: cdktest.Code(), Config: exactlyonce.Config{Namespace: "refunds"}})
	tpl := cdktest.Synth(t, stack)
	if a.Config.Namespace == b.Config.Namespace {
		t.Error("namespaces must differ")
	}
	for typ, n := range map[string]int{"AWS::SQS::Queue": 4, "AWS::DynamoDB::Table": 2, "AWS::Lambda::Function": 2, "AWS::CloudWatch::Alarm": 16, "AWS::CloudWatch::Dashboard": 2} {
		if got := len(tpl.ByType(typ)); got != n {
			t.Errorf("%d %s, want %d", got, typ, n)
		}
	}
	tpl.One(t, "AWS::SQS::Queue", "RefundsQueue")
}

func TestGrantsWithoutKey(t *testing.T) {
	stack := newStack()
	c := exactlyonce.NewConsumer(stack, "Orders", &exactlyonce.ConsumerProps{Code: cdktest.Code()})
	other := exactlyonce.NewFunction(stack, "Producer", &exactlyonce.FunctionProps{
		Code: cdktest.Code(), Timeout: time.Minute, MemoryMB: 128, LogRetention: c.Config.LogRetention, RemovalPolicy: c.Config.RemovalPolicy,
	})
	c.GrantSend(other)
	c.GrantReceipts(other)
	tpl := cdktest.Synth(t, stack)
	statements := policyStatements(tpl, "RoleProducer")
	want := map[string]string{
		"sqs:SendMessage,sqs:GetQueueAttributes,sqs:GetQueueUrl": "OrdersQueue",
		"dynamodb:GetItem,dynamodb:UpdateItem":                   "OrdersIdempotencyTable",
	}
	for actions, resource := range want {
		if s, ok := statements[actions]; !ok || !strings.Contains(s, resource) {
			t.Errorf("producer: want %s on %s, got %v", actions, resource, statements)
		}
	}
	for actions := range statements {
		if strings.Contains(actions, "kms:") {
			t.Errorf("KMS actions without a key: %s", actions)
		}
	}
}

// TestConsumerMaySendToItsQueueOnly: the runtime requeues a copy that met
// a slow holder on its last receive (sqsbatch.WithRequeue) to its own
// queue; the role may send there and nowhere else.
func TestConsumerMaySendToItsQueueOnly(t *testing.T) {
	_, tpl := synthConsumer(t, exactlyonce.ConsumerProps{})
	sends := 0
	for actions, resources := range policyStatements(tpl, "OrdersRoleConsumer") {
		if !strings.Contains(actions, "sqs:SendMessage") {
			continue
		}
		sends++
		if actions != "sqs:SendMessage" || !strings.Contains(resources, "OrdersQueue") || strings.Contains(resources, "DeadLetter") {
			t.Errorf("consumer: %s on %s, want sqs:SendMessage on its queue only", actions, resources)
		}
	}
	if sends != 1 {
		t.Errorf("%d statements with sqs:SendMessage, want 1", sends)
	}
}

func TestReceiptEnvironment(t *testing.T) {
	c, _ := synthConsumer(t, exactlyonce.ConsumerProps{Config: exactlyonce.Config{ReceiptRetention: 10 * 24 * time.Hour}})
	env := c.ReceiptEnvironment("sender")
	if *env[consumer.EnvNamespace] != "sender" || *env[consumer.EnvRetention] != "240h0m0s" ||
		*env[consumer.EnvSafetyMargin] != "3s" || env[consumer.EnvTable] == nil {
		t.Errorf("ReceiptEnvironment = %v", env)
	}
	for _, ns := range []string{"", consumer.DefaultNamespace} {
		if msg := cdktest.Panics(func() { c.ReceiptEnvironment(ns) }); !strings.Contains(msg, "must be non-empty and differ") {
			t.Errorf("ReceiptEnvironment(%q): panic = %q", ns, msg)
		}
	}
}

// policyStatements: the statements of the IAM policies whose logical id
// starts with prefix, keyed by their comma-joined actions, valued by their
// resources as JSON.
func policyStatements(tpl cdktest.Template, prefix string) map[string]string {
	out := map[string]string{}
	for id, p := range tpl.ByType("AWS::IAM::Policy") {
		if !strings.HasPrefix(id, prefix) {
			continue
		}
		doc, _ := p["PolicyDocument"].(map[string]any)
		list, _ := doc["Statement"].([]any)
		for _, s := range list {
			m := s.(map[string]any)
			out[strings.Join(cdktest.Strings(m["Action"]), ",")] = cdktest.JSON(m["Resource"])
		}
	}
	return out
}
