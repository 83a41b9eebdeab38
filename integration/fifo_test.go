//go:build integration

package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/exactlyonce/sqsidem/integration/internal/esm"
	"github.com/exactlyonce/sqsidem/integration/internal/provision"
	"github.com/exactlyonce/sqsidem/integration/internal/system"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// scenarioFIFOGroupsKeepOrder: the consumer on a FIFO queue (created here with
// the template queue's settings; the stack's own queue is standard). One
// key fails once: the later keys of its message group wait for it and are
// applied after it (the order of their receipts), other groups go on, and
// every key is applied exactly once. It runs in transactional mode when the
// effect has it: the order is what it proves, and there a machine too
// loaded for an effect's deadline cannot open lease mode's window.
//
// No check depends on how fast the machine is (it used to compare how long
// another group took with the failing key's retry, a visibility timeout:
// a loaded machine can legitimately take longer). The guarantees checked:
// each key applied once; within each group, receipts in the order sent;
// the other groups go on: none of their records was skipped for the
// failure of another group's (sqsbatch.ErrGroupFailed in a group none of
// whose records failed). The event waited for: every key applied.
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
	ctx := ctxFor(t, 4*time.Minute)
	msgs, err := s.Messages(ctx, keys...)
	if err != nil {
		t.Fatal(err)
	}
	queueURL, queueARN := createFIFOQueue(t, ctx, s)
	var mu sync.Mutex
	group := map[string]int{} // message id -> its group, from what the poller received
	poller := &esm.Poller{
		Client: s.SQS, QueueURL: queueURL, QueueARN: queueARN, Region: s.Stack.Region,
		BatchSize: s.Mapping.BatchSize, MaxConcurrency: 2, WaitTime: time.Second,
		Invoker: s.Consumer, ReportBatchItemFailures: true,
		OnBatch: func(b esm.BatchResult) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range b.Messages {
				k := system.KeyOf(s.Key, m.MessageAttributes, aws.ToString(m.Body))
				group[aws.ToString(m.MessageId)] = slices.Index(keys, k) % 3
			}
		},
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
	var applied map[string]int
	for applied = map[string]int{}; len(applied) < len(keys); {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for every key to be applied: %d of %d (%v): %v", len(applied), len(keys), applied, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
		if applied, err = s.Applied(ctx, keys); err != nil {
			t.Fatal(err)
		}
	}
	done1 := map[string]time.Time{} // when each key's receipt was written
	for i, k := range keys {
		if applied[k] != 1 {
			logRecords(t, s, k)
			t.Fatalf("key %s: applied %d times, want exactly 1", k, applied[k])
		}
		done1[k] = receipt(t, s, k).UpdatedAt
		if i >= 3 && done1[k].Before(done1[keys[i-3]]) {
			t.Fatalf("group %d: %s applied before %s, which was sent earlier", i%3, k, keys[i-3])
		}
	}
	skipped, ownFailure := map[int]int{}, map[int]bool{}
	for _, l := range s.Records.All() {
		mu.Lock()
		g, ok := group[l.MessageID]
		mu.Unlock()
		switch {
		case !ok || g == 0 || l.Error == "":
		case strings.Contains(l.Error, sqsbatch.ErrGroupFailed.Error()):
			skipped[g]++
		default:
			ownFailure[g] = true // a store failure on a loaded machine, say
		}
	}
	for g, n := range skipped {
		if !ownFailure[g] {
			t.Errorf("group %d: %d records skipped (%v) although none of the group's failed: another group's failure held them back", g, n, sqsbatch.ErrGroupFailed)
		}
	}
	t.Logf("FIFO: 12 keys in 3 groups applied once each, in order; the failing key's group took %s for its retry, another group finished in %s",
		done1[failing].Sub(done1[keys[0]]), done1[keys[10]].Sub(done1[keys[1]]))
}

// logRecords logs what the consumers logged for key (its storage key's
// records) and its receipt: what to read when a key was not applied as
// often as it should have been.
func logRecords(t *testing.T, s *system.System, key string) {
	t.Helper()
	skey := s.StorageKey(key)
	for _, l := range s.Records.All() {
		if l.RecordKey == skey {
			t.Logf("key %s: message %s: %s, attempts %d, %s", key, l.MessageID, l.Outcome, l.Attempts, l.Error)
		}
	}
	if rec, found, err := s.Receipt(context.Background(), key); err == nil && found {
		t.Logf("key %s: receipt %s, attempts %d, updated %s", key, rec.Status, rec.Attempts, rec.UpdatedAt.Format(time.RFC3339Nano))
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
