package exactlyonce_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/exactlyonce/sqsidem/infra/exactlyonce"
	"github.com/exactlyonce/sqsidem/infra/exactlyonce/cdktest"
)

// TestCustomerManagedKey: with a key, everything that stores data uses it,
// its policy lets CloudWatch Logs (and only through log groups of this
// account and region) use it, and each role gets the KMS actions its
// service calls need, on this key only.
func TestCustomerManagedKey(t *testing.T) {
	stack := newStack()
	key := exactlyonce.NewKey(stack, "Key", awscdk.RemovalPolicy_DESTROY)
	c := exactlyonce.NewConsumer(stack, "Orders", &exactlyonce.ConsumerProps{Code: cdktest.Code(), EncryptionKey: key})
	producer := exactlyonce.NewFunction(stack, "Producer", &exactlyonce.FunctionProps{
		Code: cdktest.Code(), Timeout: time.Minute, MemoryMB: 128, LogRetention: c.Config.LogRetention, RemovalPolicy: c.Config.RemovalPolicy, EncryptionKey: key,
	})
	c.GrantSend(producer)
	c.GrantReceipts(producer)
	tpl := cdktest.Synth(t, stack)

	keyIDs := tpl.ByType("AWS::KMS::Key")
	if len(keyIDs) != 1 {
		t.Fatalf("want one key, got %d", len(keyIDs))
	}
	var keyID string
	for id := range keyIDs {
		keyID = id
	}
	keyArn := map[string]any{"Fn::GetAtt": []any{keyID, "Arn"}}
	cdktest.Check(t, "key", func() {
		tpl.HasResourceProperties(jsii.String("AWS::KMS::Key"), map[string]any{
			"EnableKeyRotation": true,
			"KeyPolicy": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
				"Effect":    "Allow",
				"Principal": map[string]any{"Service": map[string]any{"Fn::Join": []any{"", []any{"logs.", map[string]any{"Ref": "AWS::Region"}, ".amazonaws.com"}}}},
				"Action":    []any{"kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"},
				"Condition": map[string]any{"ArnLike": map[string]any{"kms:EncryptionContext:aws:logs:arn": assertions.Match_AnyValue()}},
			})})},
		})
	})
	logsArn := cdktest.JSON(keyIDs[keyID]["KeyPolicy"])
	if !strings.Contains(logsArn, `":logs:",{"Ref":"AWS::Region"},":",{"Ref":"AWS::AccountId"},":log-group:*"`) {
		t.Errorf("the logs statement must be limited to this account's and region's log groups: %s", logsArn)
	}
	cdktest.Check(t, "everything encrypted with the key", func() {
		tpl.AllResourcesProperties(jsii.String("AWS::SQS::Queue"), map[string]any{"KmsMasterKeyId": keyArn, "SqsManagedSseEnabled": assertions.Match_Absent()})
		tpl.AllResourcesProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
			"SSESpecification": map[string]any{"KMSMasterKeyId": keyArn, "SSEEnabled": true, "SSEType": "KMS"},
		})
		tpl.AllResourcesProperties(jsii.String("AWS::Logs::LogGroup"), map[string]any{"KmsKeyId": keyArn})
		tpl.AllResourcesProperties(jsii.String("AWS::Lambda::Function"), map[string]any{"KmsKeyArn": keyArn})
	})

	// Consumer: receive from the queue and decrypt its environment
	// (kms:Decrypt), read and write receipts (the table actions).
	consumerKMS := kmsActions(t, tpl, "OrdersRoleConsumer", keyID)
	if got, want := consumerKMS, "kms:Decrypt kms:Decrypt,kms:DescribeKey,kms:Encrypt,kms:GenerateDataKey"; got != want {
		t.Errorf("consumer KMS statements = %q, want %q", got, want)
	}
	// Producer: its environment, SendMessage (kms:GenerateDataKey and
	// kms:Decrypt), its receipts.
	producerKMS := kmsActions(t, tpl, "RoleProducer", keyID)
	if got, want := producerKMS, "kms:Decrypt kms:GenerateDataKey,kms:Decrypt kms:Decrypt,kms:DescribeKey,kms:Encrypt,kms:GenerateDataKey"; got != want {
		t.Errorf("producer KMS statements = %q, want %q", got, want)
	}
}

// TestDeprecatedKey: Key, EncryptionKey's name before v0.3.0 (remove in
// v0.4.0), alone makes the template EncryptionKey makes; both set is
// refused, with the other problems.
func TestDeprecatedKey(t *testing.T) {
	synth := func(deprecated bool) cdktest.Template {
		stack := newStack()
		key := exactlyonce.NewKey(stack, "Key", awscdk.RemovalPolicy_DESTROY)
		props := exactlyonce.ConsumerProps{Code: cdktest.Code(), EncryptionKey: key}
		fn := exactlyonce.FunctionProps{Code: cdktest.Code(), Timeout: time.Minute, MemoryMB: 128, EncryptionKey: key}
		if deprecated {
			props.EncryptionKey, props.Key = nil, key
			fn.EncryptionKey, fn.Key = nil, key
		}
		exactlyonce.NewConsumer(stack, "Orders", &props)
		exactlyonce.NewFunction(stack, "Producer", &fn)
		return cdktest.Synth(t, stack)
	}
	got, want := cdktest.JSON(synth(true).Resources), cdktest.JSON(synth(false).Resources)
	if !strings.Contains(want, `"KmsMasterKeyId"`) {
		t.Fatal("EncryptionKey encrypts no queue: the comparison below proves nothing")
	}
	if got != want {
		t.Errorf("with Key alone the template differs from EncryptionKey's:\n%s\nwant\n%s", got, want)
	}

	stack := newStack()
	key := exactlyonce.NewKey(stack, "Key", awscdk.RemovalPolicy_DESTROY)
	msg := cdktest.Panics(func() {
		exactlyonce.NewConsumer(stack, "Orders", &exactlyonce.ConsumerProps{
			Config: exactlyonce.Config{BatchSize: 11}, Code: cdktest.Code(), EncryptionKey: key,
			Key: key, // deprecated, under test
		})
	})
	for _, want := range []string{`invalid consumer "Orders"`, "BatchSize must be in 1..10", "props.Key and props.EncryptionKey are both set"} {
		if !strings.Contains(msg, want) {
			t.Errorf("consumer: panic %q does not mention %q", msg, want)
		}
	}
	msg = cdktest.Panics(func() {
		exactlyonce.NewFunction(stack, "Producer", &exactlyonce.FunctionProps{
			Code: cdktest.Code(), Timeout: time.Minute, MemoryMB: 128, EncryptionKey: key,
			Key: key, // deprecated, under test
		})
	})
	if want := `function "Producer": props.Key and props.EncryptionKey are both set`; !strings.Contains(msg, want) {
		t.Errorf("function: panic %q does not mention %q", msg, want)
	}
}

// kmsActions lists the KMS statements of the policy of role prefix, in
// order, each as its comma-joined actions; every one must be on the key and
// name no wildcard action.
func kmsActions(t *testing.T, tpl cdktest.Template, prefix, keyID string) string {
	t.Helper()
	var out []string
	for id, p := range tpl.ByType("AWS::IAM::Policy") {
		if !strings.HasPrefix(id, prefix) {
			continue
		}
		doc, _ := p["PolicyDocument"].(map[string]any)
		list, _ := doc["Statement"].([]any)
		for _, s := range list {
			m := s.(map[string]any)
			actions := cdktest.Strings(m["Action"])
			if !strings.HasPrefix(actions[0], "kms:") {
				continue
			}
			if res := cdktest.JSON(m["Resource"]); res != `{"Fn::GetAtt":["`+keyID+`","Arn"]}` {
				t.Errorf("%s: KMS actions %v on %s, want the key only", id, actions, res)
			}
			for _, a := range actions {
				if strings.Contains(a, "*") {
					t.Errorf("%s: wildcard KMS action %s", id, a)
				}
			}
			out = append(out, strings.Join(actions, ","))
		}
	}
	return strings.Join(out, " ")
}
