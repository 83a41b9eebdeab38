package kit

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// Stack is the deployed stack as the kit found it: the consumer's
// resources by the construct's outputs, and every output, for the
// application's probe (its own tables, say).
type Stack struct {
	Name    string
	Outputs map[string]string // every output of the stack, by key
	AWS     aws.Config        // the configuration the kit's clients use

	// The consumer's, from its outputs (Consumer + consumer.Output*).
	Consumer           string // the construct's id (App.Consumer)
	ReceiptTable       string // its receipt table: HELD keys are read and settled there
	QueueURL           string
	DeadLetterQueueURL string
	Function           string
	Namespace          string // the idem namespace: the metrics' Namespace dimension
	Key                string // the business key; "" when the construct's Config.Key is unset

	// Resources: physical id -> type, for NothingLeft.
	Resources map[string]string
	physical  map[string]string // logical id -> physical id
	template  string            // as deployed
}

// CloudFormationAPI is what the kit asks of CloudFormation.
type CloudFormationAPI interface {
	DescribeStacks(context.Context, *cloudformation.DescribeStacksInput, ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
	DescribeStackResources(context.Context, *cloudformation.DescribeStackResourcesInput, ...func(*cloudformation.Options)) (*cloudformation.DescribeStackResourcesOutput, error)
	GetTemplate(context.Context, *cloudformation.GetTemplateInput, ...func(*cloudformation.Options)) (*cloudformation.GetTemplateOutput, error)
}

var _ CloudFormationAPI = (*cloudformation.Client)(nil)

// discover reads the stack name: its outputs, the consumer id's among
// them, its resources and its template.
func discover(ctx context.Context, cfn CloudFormationAPI, name, id string) (Stack, error) {
	s := Stack{Name: name, Outputs: map[string]string{}, Resources: map[string]string{}, physical: map[string]string{}}
	out, err := cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
	if err != nil {
		return s, fmt.Errorf("kit: stack %s: %w (deploy it first)", name, err)
	}
	if len(out.Stacks) != 1 {
		return s, fmt.Errorf("kit: stack %s: %d stacks described, want 1", name, len(out.Stacks))
	}
	for _, o := range out.Stacks[0].Outputs {
		s.Outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	found := consumer.ConsumersOf(s.Outputs)
	i := slices.IndexFunc(found, func(c consumer.StackOutputs) bool { return c.ID == id })
	if i < 0 {
		ids := make([]string, len(found))
		for j, c := range found {
			ids[j] = c.ID
		}
		return s, fmt.Errorf("kit: stack %s has no consumer %q (the construct's id; its consumers: %v); its outputs: %v",
			name, id, ids, slices.Sorted(maps.Keys(s.Outputs)))
	}
	c := found[i]
	for _, o := range []struct{ name, v string }{
		{consumer.OutputQueueURL, c.QueueURL}, {consumer.OutputDeadLetterQueueURL, c.DeadLetterQueueURL},
		{consumer.OutputFunctionName, c.FunctionName}, {consumer.OutputNamespace, c.Namespace},
	} {
		if o.v == "" {
			return s, fmt.Errorf("kit: stack %s: consumer %q has no output %s; its outputs: %v", name, id, o.name, slices.Sorted(maps.Keys(s.Outputs)))
		}
	}
	s.Consumer, s.ReceiptTable = c.ID, c.ReceiptTable
	s.QueueURL, s.DeadLetterQueueURL, s.Function, s.Namespace, s.Key = c.QueueURL, c.DeadLetterQueueURL, c.FunctionName, c.Namespace, c.Key

	res, err := cfn.DescribeStackResources(ctx, &cloudformation.DescribeStackResourcesInput{StackName: aws.String(name)})
	if err != nil {
		return s, fmt.Errorf("kit: stack %s: resources: %w", name, err)
	}
	for _, r := range res.StackResources {
		phys := aws.ToString(r.PhysicalResourceId)
		s.Resources[phys] = aws.ToString(r.ResourceType)
		s.physical[aws.ToString(r.LogicalResourceId)] = phys
	}
	tpl, err := cfn.GetTemplate(ctx, &cloudformation.GetTemplateInput{StackName: aws.String(name)})
	if err != nil {
		return s, fmt.Errorf("kit: stack %s: template: %w", name, err)
	}
	s.template = aws.ToString(tpl.TemplateBody)
	return s, nil
}
