package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/smithy-go"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// resources are where one consumer keeps its records and messages.
type resources struct {
	table, namespace, queueURL, dlqURL, keyField string
	// redisURL: the records are in this Redis, not in table.
	redisURL string
}

// resources finds the consumer's resources: the stack's outputs first
// (consumer.Output* suffixes, after the --consumer prefix; a stack deployed
// before v0.3.0 has the legacy ones), then the flags over them. The namespace defaults to the runtime's own default.
func (a *app) resources(ctx context.Context) (resources, error) {
	var r resources
	switch {
	case a.stack != "":
		outputs, err := a.stackOutputs(ctx)
		if err != nil {
			return r, err
		}
		c, err := pickConsumer(a.stack, consumer.ConsumersOf(outputs), a.consumer)
		if err != nil {
			return r, err
		}
		r = resources{table: c.ReceiptTable, namespace: c.Namespace, queueURL: c.QueueURL, dlqURL: c.DeadLetterQueueURL, keyField: c.Key}
	case a.consumer != "":
		return r, usagef("--consumer picks a consumer of --stack: pass --stack")
	}
	for _, f := range []struct{ flag, dst *string }{
		{&a.table, &r.table}, {&a.namespace, &r.namespace}, {&a.queueURL, &r.queueURL},
		{&a.dlqURL, &r.dlqURL}, {&a.keyField, &r.keyField},
	} {
		if *f.flag != "" {
			*f.dst = *f.flag
		}
	}
	if r.namespace == "" {
		r.namespace = consumer.DefaultNamespace
	}
	if a.redisURL != "" {
		if a.table != "" {
			return r, usagef("--table and --redis-url (or %s) name two receipt stores: pass one (--redis-url= clears %s)", envRedisURL, envRedisURL)
		}
		// The records are in Redis; a stack's table output is not theirs.
		r.table, r.redisURL = "", a.redisURL
	}
	return r, nil
}

// needStore and the others name the flag that is missing.
func (r resources) needStore() error {
	if r.table == "" && r.redisURL == "" {
		return usagef("no receipt table: pass --stack or --table, or --redis-url for a Redis store")
	}
	return nil
}

func (r resources) needDLQ() error {
	if r.dlqURL == "" {
		return usagef("no dead-letter queue: pass --stack or --dlq-url")
	}
	return nil
}

func (r resources) needQueue() error {
	if r.queueURL == "" {
		return usagef("no queue: pass --stack or --queue-url")
	}
	return nil
}

func (r resources) needKeyField() error {
	if r.keyField == "" {
		return usagef("no key field: the stack has no %s output (the consumer has a key function of its own?): pass --key-field", consumer.OutputKey)
	}
	return nil
}

func (a *app) stackOutputs(ctx context.Context) (map[string]string, error) {
	c, err := a.aws(ctx)
	if err != nil {
		return nil, err
	}
	out, err := c.cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(a.stack)})
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() == "ValidationError" && strings.Contains(api.ErrorMessage(), "does not exist") {
		return nil, fmt.Errorf("%w: stack %q does not exist in this account and region", errNotFound, a.stack)
	}
	if err != nil {
		return nil, fmt.Errorf("describe stack %q: %w", a.stack, err)
	}
	if len(out.Stacks) != 1 {
		return nil, fmt.Errorf("%w: stack %q: %d stacks answered", errNotFound, a.stack, len(out.Stacks))
	}
	outputs := map[string]string{}
	for _, o := range out.Stacks[0].Outputs {
		outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	return outputs, nil
}

// pickConsumer picks the consumer whose outputs to use: the one named
// (consumer.DefaultConsumerID for the unprefixed outputs), or the only one.
func pickConsumer(stack string, found []consumer.StackOutputs, id string) (consumer.StackOutputs, error) {
	ids := make([]string, len(found))
	for i, c := range found {
		ids[i] = c.ID
	}
	if id != "" {
		if i := slices.Index(ids, id); i >= 0 {
			return found[i], nil
		}
		return consumer.StackOutputs{}, fmt.Errorf("%w: stack %q has no consumer %q (it has: %s)", errNotFound, stack, id, orNone(ids))
	}
	switch len(found) {
	case 0:
		return consumer.StackOutputs{}, fmt.Errorf("%w: stack %q has no %s output: not a stack of the exactlyonce construct", errNotFound, stack, consumer.OutputTable)
	case 1:
		return found[0], nil
	}
	return consumer.StackOutputs{}, usagef("stack %q has %d consumers (%s): pick one with --consumer", stack, len(found), strings.Join(ids, ", "))
}

// orDefault returns s, or def when s is empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
