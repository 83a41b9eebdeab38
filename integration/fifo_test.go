//go:build integration

package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/exactlyonce/sqsidem/integration/internal/esm"
	"github.com/exactlyonce/sqsidem/integration/internal/provision"
	"github.com/exactlyonce/sqsidem/integration/internal/system"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// scenarioFIFOGroupsKeepOrder: the consumer on a FIFO queue (created here with
// the template queue's settings; the stack's own queue is standard). One
// key fails once: the later keys of its message group wait for it and are
// applied after it (the order of their receipts), other groups go on, and
// every key is applied exactly once. It runs in transactional mode when the
// effect has it: the order is what it proves, and there a machine too
// loaded for an effect's deadline cannot open lease mode's window.
func scenarioFIFOGroupsKeepOrder(t *testing.T) {
	keys := system.Keys("fifo", 12) // groups by i%3: 0,3,6,9 / 1,4,7,10 / 2,5,8,11
	failing := keys[3]              // second of group 0
	var mode string                 // the template's
	if slices.Contains(system.EffectProbe(nil, func(string) string { return "" }).Modes(), consumer.ModeTransactional) {
		mode = consumer.ModeTransactional
	}
	s := startSystem(t, system.Config{Consumers: 2, NoPoller: true, Mode: mode, ConsumerEnv: map[string]string{
		consumer.EnvFaultFailKeys: failing,
	}})
	ctx := ctxFor(t, redeliveries(s, 1)+time.Minute)
	msgs, err := s.Messages(ctx, keys...)
	if err != nil {
		t.Fatal(err)
	}
	queueURL, queueARN := createFIFOQueue(t, ctx, s)
	poller := &esm.Poller{
		Client: s.SQS, QueueURL: queueURL, QueueARN: queueARN, Region: s.Stack.Region,
		BatchSize: s.Mapping.BatchSize, MaxConcurrency: 2, WaitTime: time.Second,
		Invoker: s.Consumer, ReportBatchItemFailures: true,
	}
	pctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = poller.Run(pctx) }()
	defer func() { stop(); await(t, ctxFor(t, 30*time.Second), done, "the FIFO poller to stop") }()

	for i, m := range msgs {
		_, err := s.SQS.SendMessage(ctx, &sqs.SendMessageInput{
			QueueUrl:               aws.String(queueURL),
			MessageBody:            aws.String(string(m.Body)),
			MessageGroupId:         aws.String(fmt.Sprintf("customer-%d", i%3)),
			MessageDeduplicationId: aws.String(m.Key),
			MessageAttributes: map[string]sqstypes.MessageAttributeValue{
				s.Key: {DataType: aws.String("String"), StringValue: aws.String(m.Key)},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Wait until every key is applied.
	var applied map[string]int
	for deadline := time.Now().Add(redeliveries(s, 1)); ; time.Sleep(500 * time.Millisecond) {
		if applied, err = s.Applied(ctx, keys); err != nil {
			t.Fatal(err)
		}
		if len(applied) == len(keys) || time.Now().After(deadline) {
			break
		}
	}
	done1 := map[string]time.Time{} // when each key's receipt was written
	for i, k := range keys {
		if applied[k] != 1 {
			t.Fatalf("key %s: applied %d times, want exactly 1", k, applied[k])
		}
		done1[k] = receipt(t, s, k).UpdatedAt
		if i >= 3 && done1[k].Before(done1[keys[i-3]]) {
			t.Fatalf("group %d: %s applied before %s, which was sent earlier", i%3, k, keys[i-3])
		}
	}
	wait := done1[failing].Sub(done1[keys[0]])
	other := done1[keys[10]].Sub(done1[keys[1]])
	t.Logf("FIFO: 12 keys in 3 groups applied once each, in order; the failing key's group waited %s for its retry, another group finished in %s",
		wait, other)
	if other >= wait {
		t.Fatalf("the other groups waited for the failing one (%s >= %s)", other, wait)
	}
}

// createFIFOQueue creates a FIFO queue and its FIFO DLQ with the visibility
// timeout and maxReceiveCount of the template's queue.
func createFIFOQueue(t *testing.T, ctx context.Context, s *system.System) (url, arn string) {
	t.Helper()
	attrs := func(url string) string {
		out, err := s.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
		})
		if err != nil {
			t.Fatal(err)
		}
		return out.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	}
	create := func(name string, extra map[string]string) string {
		a := map[string]string{"FifoQueue": "true", "VisibilityTimeout": fmt.Sprint(int(s.Queue.VisibilityTimeout.Seconds()))}
		for k, v := range extra {
			a[k] = v
		}
		out, err := s.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: a})
		if err != nil {
			t.Fatal(err)
		}
		u := aws.ToString(out.QueueUrl)
		t.Cleanup(func() { _, _ = s.SQS.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(u)}) })
		return u
	}
	suffix := provision.NewSuffix()
	dlq := create("fifo-dlq-"+suffix+".fifo", nil)
	redrive := fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, attrs(dlq), s.Queue.MaxReceiveCount)
	url = create("fifo-"+suffix+".fifo", map[string]string{"RedrivePolicy": redrive})
	return url, attrs(url)
}
