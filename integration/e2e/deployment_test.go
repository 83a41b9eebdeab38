//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/integration/internal/partner"
	"github.com/exactlyonce/sqsidem/integration/internal/system"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// clients talk to the endpoint in AWS_ENDPOINT_URL (LocalStack), never to
// an account: dummy credentials, us-east-1 (cdklocal deploys there).
type clients struct {
	cfn    *cloudformation.Client
	sqs    *sqs.Client
	ddb    *dynamodb.Client
	lambda *lambda.Client
	logs   *cloudwatchlogs.Client
}

func newClients(ctx context.Context, t *testing.T) clients {
	t.Helper()
	if os.Getenv("AWS_ENDPOINT_URL") == "" {
		t.Fatal("AWS_ENDPOINT_URL is not set: run `make e2e-localstack`")
	}
	cfg, err := config.LoadDefaultConfig(ctx,
		config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
	)
	if err != nil {
		t.Fatal(err)
	}
	return clients{
		cfn:    cloudformation.NewFromConfig(cfg),
		sqs:    sqs.NewFromConfig(cfg),
		ddb:    dynamodb.NewFromConfig(cfg),
		lambda: lambda.NewFromConfig(cfg),
		logs:   cloudwatchlogs.NewFromConfig(cfg),
	}
}

// deployment is the deployed stack, found by its outputs.
type deployment struct {
	clients
	stackName, template        string
	outputs                    map[string]string
	resources                  []cfntypes.StackResource
	queueURL, dlqURL           string
	producerName, consumerName string
	key                        string // the consumer's key attribute
	probe                      system.Probe
	maxReceiveCount            int
}

func deployed(ctx context.Context, t *testing.T) *deployment {
	t.Helper()
	stack := theStack(t)
	d := &deployment{clients: newClients(ctx, t), stackName: stack.Name, template: stack.Template, outputs: map[string]string{}}
	out, err := d.cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(d.stackName)})
	if err != nil || len(out.Stacks) != 1 {
		t.Fatalf("stack %s: %v (run `make deploy-local` first)", d.stackName, err)
	}
	st := out.Stacks[0]
	if !strings.HasSuffix(string(st.StackStatus), "_COMPLETE") || strings.Contains(string(st.StackStatus), "ROLLBACK") {
		t.Fatalf("stack %s is %s", d.stackName, st.StackStatus)
	}
	for _, o := range st.Outputs {
		d.outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	// The template's consumer is the construct's id Default: no prefix.
	cs := consumer.ConsumersOf(d.outputs)
	if len(cs) != 1 || cs[0].ID != consumer.DefaultConsumerID {
		t.Fatalf("stack %s: consumers %+v, want one, %s: %v", d.stackName, cs, consumer.DefaultConsumerID, d.outputs)
	}
	c := cs[0]
	d.queueURL, d.dlqURL, d.key, d.consumerName = c.QueueURL, c.DeadLetterQueueURL, c.Key, c.FunctionName
	d.producerName = d.outputs[contract.OutputProducerFunctionName]
	for name, v := range map[string]string{
		consumer.OutputQueueURL: d.queueURL, consumer.OutputDeadLetterQueueURL: d.dlqURL, consumer.OutputKey: d.key,
		consumer.OutputFunctionName: d.consumerName, contract.OutputProducerFunctionName: d.producerName,
	} {
		if v == "" {
			t.Fatalf("stack %s has no output %s: %v", d.stackName, name, d.outputs)
		}
	}
	res, err := d.cfn.DescribeStackResources(ctx, &cloudformation.DescribeStackResourcesInput{StackName: aws.String(d.stackName)})
	if err != nil {
		t.Fatal(err)
	}
	d.resources = res.StackResources
	for _, r := range d.resources {
		if !strings.HasSuffix(string(r.ResourceStatus), "_COMPLETE") {
			t.Errorf("resource %s (%s) is %s", aws.ToString(r.LogicalResourceId), aws.ToString(r.ResourceType), r.ResourceStatus)
		}
	}
	attrs, err := d.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(d.queueURL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameRedrivePolicy},
	})
	if err != nil {
		t.Fatal(err)
	}
	var redrive struct {
		MaxReceiveCount json.Number `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(attrs.Attributes[string(sqstypes.QueueAttributeNameRedrivePolicy)]), &redrive); err != nil {
		t.Fatalf("the deployed queue's redrive policy: %v", err)
	}
	n, _ := redrive.MaxReceiveCount.Int64()
	d.maxReceiveCount = int(n)
	// The probe reads the effect's deployed tables, named in the deployed
	// consumer's environment.
	fn, err := d.lambda.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(d.consumerName)})
	if err != nil || fn.Environment == nil {
		t.Fatalf("the consumer's configuration: %v", err)
	}
	env := fn.Environment.Variables
	startPartner(t, env)
	d.probe = system.EffectProbe(d.ddb, func(k string) string { return env[k] })
	return d
}

// The partner the deployed consumer calls: the test profiles point the
// effect's settings at contract.SuitePartner, where this process serves
// one partner for all its tests, counting every call.
var (
	partnerOnce sync.Once
	partnerErr  error
)

// startPartner serves the suite's partner if a setting of env (the
// deployed consumer's) names it.
func startPartner(t *testing.T, env map[string]string) {
	t.Helper()
	uses := false
	for _, v := range env {
		uses = uses || strings.HasPrefix(v, contract.SuitePartner)
	}
	if !uses {
		return
	}
	partnerOnce.Do(func() {
		_, partnerErr = partner.Start(partner.IgnoreKey(), partner.At(strings.TrimPrefix(contract.SuitePartner, "http://")))
	})
	if partnerErr != nil {
		t.Fatalf("the partner the deployed consumer calls (%s): %v", contract.SuitePartner, partnerErr)
	}
}

// messages seeds what the effect needs for keys and returns the probe's
// message for each.
func (d *deployment) messages(ctx context.Context, t *testing.T, keys ...string) []system.Message {
	t.Helper()
	if err := d.probe.Seed(ctx, keys); err != nil {
		t.Fatal(err)
	}
	out := make([]system.Message, len(keys))
	for i, k := range keys {
		body, err := d.probe.Message(k, 0)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = system.Message{Key: k, Body: body}
	}
	return out
}

// produceAll invokes the deployed producer until every message is sent or
// known as sent, as a scheduler re-runs a run that timed out (on a loaded
// machine the first, cold run may): the producer's guard sends none twice
// while it knows. It returns the messages sent and the runs made.
func (d *deployment) produceAll(ctx context.Context, t *testing.T, msgs []system.Message) (sent, runs int) {
	t.Helper()
	for runs = 1; ; runs++ {
		res, err := d.invokeProducer(ctx, msgs)
		sent += res.Sent
		if err == nil && res.Sent+res.Duplicates == len(msgs) {
			return sent, runs
		}
		if runs == 5 {
			t.Fatalf("producer: messages still not sent after %d runs: %+v, %v", runs, res, err)
		}
		t.Logf("producer run %d: %+v, %v; running it again", runs, res, err)
	}
}

// produce invokes the deployed producer synchronously; it must succeed.
func (d *deployment) produce(ctx context.Context, t *testing.T, msgs []system.Message) system.ProducerResult {
	t.Helper()
	res, err := d.invokeProducer(ctx, msgs)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (d *deployment) invokeProducer(ctx context.Context, msgs []system.Message) (system.ProducerResult, error) {
	payload, err := system.ProducerInput(msgs)
	if err != nil {
		return system.ProducerResult{}, err
	}
	out, err := d.lambda.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(d.producerName), Payload: payload})
	if err != nil {
		return system.ProducerResult{}, fmt.Errorf("invoke %s: %w", d.producerName, err)
	}
	if out.FunctionError != nil {
		return system.ProducerResult{}, fmt.Errorf("producer failed: %s: %s", aws.ToString(out.FunctionError), out.Payload)
	}
	var res system.ProducerResult
	if err := json.Unmarshal(out.Payload, &res); err != nil {
		return res, fmt.Errorf("producer answered %q: %w", out.Payload, err)
	}
	return res, nil
}

// sendRaw sends msgs straight to the queue, as an upstream that knows
// nothing of the producer's guard would: raw duplicates.
func (d *deployment) sendRaw(ctx context.Context, msgs ...system.Message) error {
	for _, m := range msgs {
		if _, err := d.send(ctx, string(m.Body), m.Key); err != nil {
			return err
		}
	}
	return nil
}

// sendBody sends body with key as its key attribute, none when key is "".
func (d *deployment) sendBody(ctx context.Context, t *testing.T, body, key string) string {
	t.Helper()
	id, err := d.send(ctx, body, key)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func (d *deployment) send(ctx context.Context, body, key string) (string, error) {
	in := &sqs.SendMessageInput{QueueUrl: aws.String(d.queueURL), MessageBody: aws.String(body)}
	if key != "" {
		in.MessageAttributes = map[string]sqstypes.MessageAttributeValue{
			d.key: {DataType: aws.String("String"), StringValue: aws.String(key)},
		}
	}
	out, err := d.sqs.SendMessage(ctx, in)
	if err != nil {
		return "", fmt.Errorf("send to %s: %w", d.queueURL, err)
	}
	return aws.ToString(out.MessageId), nil
}

// consumerLog reads the consumer's per-record lines from CloudWatch Logs,
// where LocalStack puts the function's output.
func (d *deployment) consumerLog(ctx context.Context, t *testing.T) []system.Line {
	t.Helper()
	rec := system.NewRecords()
	p := cloudwatchlogs.NewFilterLogEventsPaginator(d.logs, &cloudwatchlogs.FilterLogEventsInput{
		LogGroupName:  aws.String("/aws/lambda/" + d.consumerName),
		FilterPattern: aws.String(`"record "`),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("consumer logs: %v", err)
		}
		for _, e := range page.Events {
			_, _ = rec.Write([]byte(aws.ToString(e.Message) + "\n"))
		}
	}
	return rec.All()
}

// deadLetters reads the deployed DLQ, with each message's reason from the
// consumer's log.
func (d *deployment) deadLetters(ctx context.Context, t *testing.T, lines []system.Line) []system.DeadLetter {
	t.Helper()
	reason := map[string]string{}
	for _, l := range lines {
		if l.Error != "" {
			reason[l.MessageID] = l.Error
		}
	}
	var out []system.DeadLetter
	for empty := 0; empty < 2; {
		res, err := d.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(d.dlqURL), MaxNumberOfMessages: 10, VisibilityTimeout: 60,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			t.Fatalf("read DLQ: %v", err)
		}
		if len(res.Messages) == 0 {
			empty++
			continue
		}
		for _, m := range res.Messages {
			dl := system.DeadLetter{MessageID: aws.ToString(m.MessageId), Body: aws.ToString(m.Body), Reason: reason[aws.ToString(m.MessageId)]}
			// Our own read counts as a receive too.
			dl.Receives, _ = strconv.Atoi(m.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)])
			dl.Receives--
			dl.Key = system.KeyOf(d.key, m.MessageAttributes, dl.Body)
			out = append(out, dl)
		}
	}
	return out
}
