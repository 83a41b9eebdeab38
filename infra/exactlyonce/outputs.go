package exactlyonce

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// unprefixedID is the construct id whose outputs carry no prefix.
const unprefixedID = "Default"

// addOutputs adds the stack outputs an operator tool finds the consumer by:
// the construct id, then the suffix consumer names (OutputQueueURL…). The
// logical ids are set, not derived from the construct path, so that they
// stay what consumer names; the id "Default" adds no prefix, so a stack
// with one consumer keeps the plain names.
func (c *Consumer) addOutputs(id string) {
	prefix := id
	if id == unprefixedID {
		prefix = ""
	}
	out := func(suffix, description string, value *string) {
		o := awscdk.NewCfnOutput(c, jsii.String(suffix), &awscdk.CfnOutputProps{Value: value, Description: jsii.String(description)})
		o.OverrideLogicalId(jsii.String(prefix + suffix))
	}
	out(consumer.OutputQueueURL, "The queue the consumer reads", c.Queue.QueueUrl())
	out(consumer.OutputDeadLetterQueueURL, "Messages that failed MaxReceiveCount times", c.DeadLetterQueue.QueueUrl())
	out(consumer.OutputTable, "The receipt table", c.Receipts.TableName())
	out(consumer.OutputFunctionName, "The consumer function", c.Function.FunctionName())
	out(consumer.OutputNamespace, "The idem namespace of the consumer's receipts", jsii.String(c.Config.Namespace))
	if c.Config.Key != "" {
		out(consumer.OutputKey, "The business key: the message attribute, else the body's field", jsii.String(c.Config.Key))
	}
}
