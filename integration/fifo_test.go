//go:build integration

package integration

import (
	"context"
	"fmt"
	"maps"
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
	"github.com/exactlyonce/sqsidem/pkg/idem"
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
// The failure is not marked definite: in lease mode, what the retry of
// the failing key does is the consumer's promise. Exactly once (a
// Reconcile) or at least once (retry, no reconcile): it runs the effect
// (the failure came before it). At most once (hold, no reconcile): it
// holds the key; its message, and the later ones of its group received
// with it each time (skipped, each receive counted), go to the FIFO DLQ
// after maxReceiveCount receives, and the rest of the group goes on; the
// operator settles the held key (not done) and sends the dead letters
// back to the queue in their order (idemctl reads standard DLQs only: the
// SQS console's redrive, here a receive and a send).
//
// No check depends on how fast the machine is (it used to compare how long
// another group took with the failing key's retry, a visibility timeout:
// a loaded machine can legitimately take longer). The guarantees checked:
// each key applied once; within each group, receipts in the order sent
// (at most once: of the messages the queue delivered, and of those the
// operator sent back; none sent after a held key applied before it was
// held); the other groups go on: none of their records was
// skipped for the failure of another group's (sqsbatch.ErrGroupFailed in
// a group none of whose records failed). The event waited for: every key
// applied, or (at most once) the queue empty and every key not applied
// in the DLQ.
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
	queueURL, queueARN, dlqURL := createFIFOQueue(t, ctx, s)
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
	// Wait for every key to be applied, or (at most once) for the queue to
	// be empty, every key not applied in the DLQ; a loaded machine may
	// hold other keys than the failing one (an effect that outlived its
	// lease).
	holds := s.Promise.Is(consumer.GuaranteeAtMostOnce)
	var applied map[string]int
	heldAt := map[string]time.Time{} // when each held key was held
	var redriven []string            // keys whose messages the operator sent back
	for applied = map[string]int{}; ; {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: waiting for every key to be applied: %d of %d (%v), held %v: %v", s.Promise, len(applied), len(keys), applied, slices.Sorted(maps.Keys(heldAt)), ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
		if applied, err = s.Applied(ctx, keys); err != nil {
			t.Fatal(err)
		}
		if len(applied) == len(keys) {
			break
		}
		if !holds {
			continue
		}
		clear(heldAt)
		for _, k := range keys {
			if rec, _, _ := s.Receipt(ctx, k); rec.Status == idem.StatusHeld {
				heldAt[k] = rec.UpdatedAt
			}
		}
		visible, inFlight, err := s.Depth(ctx, queueURL)
		if err != nil {
			t.Fatal(err)
		}
		dead, deadInFlight, err := s.Depth(ctx, dlqURL)
		if err != nil {
			t.Fatal(err)
		}
		if visible+inFlight == 0 && len(heldAt) > 0 && dead+deadInFlight >= len(keys)-len(applied) {
			break
		}
	}
	if holds {
		if _, ok := heldAt[failing]; !ok {
			t.Fatalf("%s: the failing key %s was not held (applied %v): want it held, nothing could settle its unknown outcome", s.Promise, failing, applied)
		}
		redriven = settleFIFO(t, ctx, s, queueURL, dlqURL, keys, slices.Sorted(maps.Keys(heldAt)))
		if applied, err = s.Applied(ctx, keys); err != nil {
			t.Fatal(err)
		}
	}
	// In order within each group: the keys the queue delivered, and,
	// after them, those the operator sent back (a message that used up its
	// receives left its group, and the rest of the group went on).
	done1 := map[string]time.Time{} // when each key's receipt was written
	type lane struct {
		group int
		back  bool
	}
	prev := map[lane]string{} // the last key of each group's lane, in the order sent
	for i, k := range keys {
		if applied[k] != 1 {
			logRecords(t, s, k)
			t.Fatalf("%s: key %s: applied %d times, want exactly 1", s.Promise, k, applied[k])
		}
		done1[k] = receipt(t, s, k).UpdatedAt
		l := lane{i % 3, slices.Contains(redriven, k)}
		if p, ok := prev[l]; ok && done1[k].Before(done1[p]) {
			t.Fatalf("group %d: %s applied before %s, which was sent earlier", i%3, k, p)
		}
		for j := i % 3; j < i; j += 3 {
			if at, held := heldAt[keys[j]]; held && done1[k].Before(at) {
				t.Fatalf("group %d: %s applied before %s, sent earlier, was held (%s): it did not wait for it", i%3, k, keys[j], at.Format(time.RFC3339Nano))
			}
		}
		prev[l] = k
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

// settleFIFO plays the operator for held, keys the consumer of the FIFO
// queue at queueURL holds, with the dead letters of their groups in its
// DLQ at dlqURL: idemctl lists them, the probe says whether each took
// place, idemctl resolve settles each (--done or --not-done), and the dead
// letters go back to their queue, in their groups, in the order keys
// were sent (what SQS's own redrive does: idemctl reads standard DLQs
// only); then the consumer applies every key. It returns the keys whose
// messages went back.
func settleFIFO(t *testing.T, ctx context.Context, s *system.System, queueURL, dlqURL string, keys, held []string) (redriven []string) {
	t.Helper()
	cli := newSystemCLI(ctx, t, s)
	out := cli.run(ctx, t, "list", "--status", "held", "--limit", "0")
	applied, err := s.Applied(ctx, held)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range held {
		if !strings.Contains(out, s.StorageKey(k)) && !strings.Contains(out, k) {
			t.Fatalf("idemctl list --status held does not list %s:\n%s", k, out)
		}
		decision := "--not-done"
		if applied[k] > 0 {
			decision = "--done"
		}
		cli.quiet(ctx, t, "resolve", k, decision, "--yes")
	}
	// Every dead letter, then back in the order sent.
	var dead []sqstypes.Message
	for empty := 0; empty < 2; {
		res, err := s.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(dlqURL), WaitTimeSeconds: 1, MaxNumberOfMessages: 10, VisibilityTimeout: 300,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameMessageGroupId},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) == 0 {
			empty++
		}
		dead = append(dead, res.Messages...)
	}
	keyOf := func(m sqstypes.Message) string { return system.KeyOf(s.Key, m.MessageAttributes, aws.ToString(m.Body)) }
	slices.SortFunc(dead, func(a, b sqstypes.Message) int { return slices.Index(keys, keyOf(a)) - slices.Index(keys, keyOf(b)) })
	for _, m := range dead {
		k := keyOf(m)
		if !slices.Contains(keys, k) {
			t.Fatalf("the FIFO DLQ holds a message of %q, not one of the scenario's", k)
		}
		if _, err := s.SQS.SendMessage(ctx, &sqs.SendMessageInput{
			QueueUrl: aws.String(queueURL), MessageBody: m.Body, MessageAttributes: m.MessageAttributes,
			MessageGroupId:         aws.String(m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageGroupId)]),
			MessageDeduplicationId: aws.String(k + "-redriven"), // the first send's id is still remembered
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(dlqURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
			t.Fatal(err)
		}
		redriven = append(redriven, k)
	}
	t.Logf("%s: held %v settled, the dead letters of %v sent back in order", s.Promise, held, redriven)
	for {
		applied, err := s.Applied(ctx, keys)
		if err != nil {
			t.Fatal(err)
		}
		if len(applied) == len(keys) {
			return redriven
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: waiting for every key to be applied after the operator: %v: %v", s.Promise, applied, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// createFIFOQueue creates a FIFO queue and its FIFO DLQ with the visibility
// timeout and maxReceiveCount of the template's queue.
func createFIFOQueue(t *testing.T, ctx context.Context, s *system.System) (url, arn, dlqURL string) {
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
	return url, attrs(url), dlq
}
