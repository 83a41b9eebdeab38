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

// outputPrefix is the prefix of the construct id's outputs: the construct
// gives the id "Default" none.
func outputPrefix(id string) string {
	if id == "Default" {
		return ""
	}
	return id
}

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
	p := outputPrefix(id)
	for _, o := range []struct {
		suffix string
		dst    *string
	}{
		{consumer.OutputQueueURL, &s.QueueURL}, {consumer.OutputDeadLetterQueueURL, &s.DeadLetterQueueURL},
		{consumer.OutputFunctionName, &s.Function}, {consumer.OutputNamespace, &s.Namespace},
	} {
		if *o.dst = s.Outputs[p+o.suffix]; *o.dst == "" {
			return s, fmt.Errorf("kit: stack %s has no output %s (is %q the construct's id?); its outputs: %v",
				name, p+o.suffix, id, slices.Sorted(maps.Keys(s.Outputs)))
		}
	}
	s.Key = s.Outputs[p+consumer.OutputKey]

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
