package exactlyonce

import (
	"errors"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// KMS actions a principal needs on a customer-managed key, by the service
// that calls KMS on its behalf. None is a wildcard, so cdk-nag's IAM5 holds.
var (
	// queueSendKeyActions: SendMessage to an SSE-KMS queue.
	queueSendKeyActions = []string{"kms:GenerateDataKey", "kms:Decrypt"}
	// tableKeyActions: reading and writing items of a table encrypted with
	// the key (the set CDK's grantReadWriteData uses, without the wildcards
	// kms:ReEncrypt* and kms:GenerateDataKey*, which item access does not
	// need). Receiving from an SSE-KMS queue needs kms:Decrypt, included.
	tableKeyActions = []string{"kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey"}
)

// NewKey creates a customer-managed KMS key for a consumer
// (ConsumerProps.EncryptionKey) and the functions and tables around it
// (FunctionProps.EncryptionKey, TableEncryption): rotation on, and a key
// policy that lets CloudWatch Logs encrypt this account's log groups in
// this region with it.
//
// The rest of the policy is CDK's default: the account may use the key
// through IAM. NewConsumer and the Grant methods give each role exactly the
// actions above; nothing else in the account can use the key unless an IAM
// policy grants it.
func NewKey(scope constructs.Construct, id string, removal awscdk.RemovalPolicy) awskms.Key {
	key := awskms.NewKey(scope, jsii.String(id), &awskms.KeyProps{
		Description:       jsii.String("Encrypts the exactly-once consumer's queues, tables, log groups and function environments"),
		EnableKeyRotation: jsii.Bool(true),
		RemovalPolicy:     removal,
	})
	stack := awscdk.Stack_Of(scope)
	// CloudWatch Logs calls KMS as its regional service principal, with the
	// log group's ARN in the encryption context. The log groups' names are
	// generated, and naming their ARNs here would be a circular reference
	// (each log group refers to the key), hence every log group of the
	// account and region.
	key.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("AllowCloudWatchLogs"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("logs."+*stack.Region()+".amazonaws.com"), nil)},
		Actions:    jsii.Strings("kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"),
		Resources:  jsii.Strings("*"), // in a key policy, "*" is this key
		Conditions: &map[string]any{
			"ArnLike": map[string]any{
				"kms:EncryptionContext:aws:logs:arn": "arn:" + *stack.Partition() + ":logs:" + *stack.Region() + ":" + *stack.Account() + ":log-group:*",
			},
		},
	}), nil)
	return key
}

// grantKey gives grantee actions on key, if there is a key.
func grantKey(key awskms.IKey, grantee awsiam.IGrantable, actions []string) {
	if key != nil {
		key.Grant(grantee, *jsii.Strings(actions...)...)
	}
}

// encryptionKey is the key of props that have EncryptionKey and its
// deprecated name Key (remove in v0.4.0): either one, not both.
func encryptionKey(key, deprecated awskms.IKey) (awskms.IKey, error) {
	switch {
	case deprecated == nil:
		return key, nil
	case key == nil:
		return deprecated, nil
	}
	return nil, errors.New("props.Key and props.EncryptionKey are both set: Key is EncryptionKey's deprecated name, set EncryptionKey alone")
}
