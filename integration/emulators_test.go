//go:build integration

// Package integration holds tests that need real AWS APIs: local emulators
// (started by integration/internal/emu) or LocalStack via AWS_ENDPOINT_URL.
//
// The tests in this file pin down the emulator behaviour the library depends
// on, so a difference from AWS shows up here rather than as a confusing
// failure in an end-to-end test.
//
//	integration/scripts/install-emulators.sh
//	go test -tags integration -run Emulator ./integration/ -v
package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/exactlyonce/sqsidem/integration/internal/emu"
)

// TestEmulatorBehaviour runs every check as a parallel subtest (most of them
// sleep through visibility timeouts) on the package's shared emulators
// (main_test.go), so the suite starts one JVM of each kind, not two.
func TestEmulatorBehaviour(t *testing.T) {
	ddbURL, sqsURL := dynamoEndpoint(t), sqsEndpoint(t)
	ctx := context.Background()
	ddb, mq, err := emu.Clients(ctx, ddbURL, sqsURL)
	if err != nil {
		t.Fatal(err)
	}
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)

	sqsCases := map[string]func(t *testing.T, q sqsQueue){
		"SQSVisibilityTimeout":       testVisibilityTimeout,
		"SQSApproximateReceiveCount": testApproximateReceiveCount,
		"SQSRedriveToDLQ":            testRedriveToDLQ,
		"SQSDeleteBatchStaleReceipt": testDeleteBatchStaleReceipt,
		"SQSSendBatchAttributes":     testSendBatchAttributes,
		"SQSChangeMessageVisibility": testChangeMessageVisibility,
	}
	for name, fn := range sqsCases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, sqsQueue{ctx: ctx, c: mq, name: name + "-" + suffix})
		})
	}
	t.Run("DynamoDB", func(t *testing.T) {
		t.Parallel()
		testDynamoDB(ctx, t, ddb, "emu-"+suffix)
	})
}

// sqsQueue carries what each SQS subtest needs; create makes queues named
// after the subtest so parallel subtests never share one.
type sqsQueue struct {
	ctx  context.Context
	c    *sqs.Client
	name string
}

func (q sqsQueue) create(t *testing.T, suffix string, attrs map[string]string) string {
	t.Helper()
	out, err := q.c.CreateQueue(q.ctx, &sqs.CreateQueueInput{QueueName: aws.String(q.name + suffix), Attributes: attrs})
	if err != nil {
		t.Fatalf("CreateQueue: %v", err)
	}
	return *out.QueueUrl
}

func (q sqsQueue) send(t *testing.T, url, body string) string {
	t.Helper()
	out, err := q.c.SendMessage(q.ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	return *out.MessageId
}

// receive returns at most one message, or nil. vis < 0 keeps the queue's
// visibility timeout.
func (q sqsQueue) receive(t *testing.T, url string, wait, vis int32) *types.Message {
	t.Helper()
	in := &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(url),
		MaxNumberOfMessages:         1,
		WaitTimeSeconds:             wait,
		MessageAttributeNames:       []string{"All"},
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
	}
	if vis >= 0 {
		in.VisibilityTimeout = vis
	}
	out, err := q.c.ReceiveMessage(q.ctx, in)
	if err != nil {
		t.Fatalf("ReceiveMessage: %v", err)
	}
	if len(out.Messages) == 0 {
		return nil
	}
	return &out.Messages[0]
}

// pollUntilVisible short-polls every 100 ms, at most limit, and returns
// the message (nil if none appeared).
func (q sqsQueue) pollUntilVisible(t *testing.T, url string, limit time.Duration, vis int32) *types.Message {
	t.Helper()
	began := time.Now()
	for time.Since(began) < limit {
		if m := q.receive(t, url, 0, vis); m != nil {
			return m
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

func receiveCount(t *testing.T, m *types.Message) int {
	t.Helper()
	n, err := strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	if err != nil {
		t.Fatalf("ApproximateReceiveCount %q: %v", m.Attributes["ApproximateReceiveCount"], err)
	}
	return n
}

// (1) A received, undeleted message reappears after the visibility timeout,
// not before. The library's lease relies on this for redelivery. The time
// is taken from before the first receive is sent, so that it is never
// shorter than the message was hidden, however slow the machine answers;
// how much later it reappears is logged, not asserted (a loaded machine
// polls late).
func testVisibilityTimeout(t *testing.T, q sqsQueue) {
	url := q.create(t, "", map[string]string{"VisibilityTimeout": "2"})
	id := q.send(t, url, "v")
	began := time.Now()
	if m := q.receive(t, url, 0, -1); m == nil || *m.MessageId != id {
		t.Fatalf("first receive: got %v", m)
	}
	m := q.pollUntilVisible(t, url, time.Minute, -1)
	took := time.Since(began)
	if m == nil {
		t.Fatalf("message not visible again within %v", took)
	}
	t.Logf("visible again %.2fs after the receive was sent (VisibilityTimeout=2)", took.Seconds())
	if took < 1800*time.Millisecond {
		t.Errorf("message visible %v after the receive was sent, before the 2s visibility timeout", took)
	}
}

// (2) ApproximateReceiveCount goes 1, 2, 3 across receives. The library
// uses it to decide when a poison message is about to hit the DLQ.
func testApproximateReceiveCount(t *testing.T, q sqsQueue) {
	url := q.create(t, "", nil)
	q.send(t, url, "c")
	for want := 1; want <= 3; want++ {
		m := q.receive(t, url, 5, 1)
		if m == nil {
			t.Fatalf("receive %d: no message", want)
		}
		if got := receiveCount(t, m); got != want {
			t.Errorf("receive %d: ApproximateReceiveCount=%d", want, got)
		}
	}
}

// (3) With maxReceiveCount=N the message moves to the DLQ after N receives:
// the (N+1)th receive attempt finds the source empty and the DLQ has it.
func testRedriveToDLQ(t *testing.T, q sqsQueue) {
	const maxReceives = 2
	dlq := q.create(t, "-dlq", nil)
	attrs, err := q.c.GetQueueAttributes(q.ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(dlq), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		t.Fatalf("GetQueueAttributes: %v", err)
	}
	dlqArn := attrs.Attributes["QueueArn"]
	t.Logf("DLQ ARN %s", dlqArn)
	policy, _ := json.Marshal(map[string]string{"deadLetterTargetArn": dlqArn, "maxReceiveCount": strconv.Itoa(maxReceives)})
	src := q.create(t, "", map[string]string{"VisibilityTimeout": "1", "RedrivePolicy": string(policy)})

	id := q.send(t, src, "poison")
	for i := 1; i <= maxReceives; i++ {
		m := q.receive(t, src, 5, -1)
		if m == nil {
			t.Fatalf("receive %d from source: no message", i)
		}
	}
	// Past the last visibility timeout the next receive would be number N+1,
	// which is when SQS moves the message instead of returning it.
	if m := q.receive(t, src, 3, -1); m != nil {
		t.Fatalf("receive %d from source returned the message (count %d); want it moved to the DLQ", maxReceives+1, receiveCount(t, m))
	}
	m := q.receive(t, dlq, 5, -1)
	if m == nil {
		t.Fatal("message not in DLQ")
	}
	if *m.MessageId != id || *m.Body != "poison" {
		t.Errorf("DLQ message id=%s body=%q; want id=%s body=poison", *m.MessageId, *m.Body, id)
	}
	t.Logf("DLQ copy: MessageId preserved=%v, ApproximateReceiveCount=%s, DeadLetterQueueSourceArn=%q",
		*m.MessageId == id, m.Attributes["ApproximateReceiveCount"], m.Attributes["DeadLetterQueueSourceArn"])

	counts, err := q.c.GetQueueAttributes(q.ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(src),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	if err != nil {
		t.Fatalf("GetQueueAttributes: %v", err)
	}
	if counts.Attributes["ApproximateNumberOfMessages"] != "0" || counts.Attributes["ApproximateNumberOfMessagesNotVisible"] != "0" {
		t.Errorf("source queue not empty: %v", counts.Attributes)
	}
}

// (4) DeleteMessageBatch with a receipt handle superseded by a later receive,
// and with a garbage handle. AWS documents the stale case as "may succeed
// without deleting"; this test records what the emulator does (see -v output)
// and only fails on transport errors.
func testDeleteBatchStaleReceipt(t *testing.T, q sqsQueue) {
	url := q.create(t, "", map[string]string{"VisibilityTimeout": "1"})
	q.send(t, url, "stale")
	first := q.receive(t, url, 0, -1)
	if first == nil {
		t.Fatal("no message")
	}
	second := q.receive(t, url, 5, -1)
	if second == nil {
		t.Fatal("message not redelivered")
	}
	out, err := q.c.DeleteMessageBatch(q.ctx, &sqs.DeleteMessageBatchInput{
		QueueUrl: aws.String(url),
		Entries: []types.DeleteMessageBatchRequestEntry{
			{Id: aws.String("stale"), ReceiptHandle: first.ReceiptHandle},
			{Id: aws.String("garbage"), ReceiptHandle: aws.String("not-a-receipt-handle")},
		},
	})
	if err != nil {
		t.Fatalf("DeleteMessageBatch: %v (the whole call failed)", err)
	}
	for _, s := range out.Successful {
		t.Logf("DeleteMessageBatch entry %s: Successful", *s.Id)
	}
	for _, f := range out.Failed {
		t.Logf("DeleteMessageBatch entry %s: Failed code=%s senderFault=%v message=%q", *f.Id, aws.ToString(f.Code), f.SenderFault, aws.ToString(f.Message))
	}
	// Did the stale handle delete the message? Wait out the second receive's
	// visibility timeout and look.
	again := q.receive(t, url, 3, -1)
	t.Logf("after stale-handle delete: message still in queue = %v", again != nil)
	if again != nil {
		// The current handle must still work, whatever the stale one did.
		if _, err := q.c.DeleteMessage(q.ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: again.ReceiptHandle}); err != nil {
			t.Errorf("DeleteMessage with current handle: %v", err)
		}
	}
}

// (5) SendMessageBatch with message attributes of each data type round-trips
// them (and the SDK's MD5 check of attributes passes).
func testSendBatchAttributes(t *testing.T, q sqsQueue) {
	url := q.create(t, "", nil)
	attrs := func(i int) map[string]types.MessageAttributeValue {
		return map[string]types.MessageAttributeValue{
			"idem-key": {DataType: aws.String("String"), StringValue: aws.String(fmt.Sprintf("key-%d", i))},
			"attempt":  {DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(i + 1))},
			"blob":     {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2, byte(i)}},
			"trace.id": {DataType: aws.String("String.custom"), StringValue: aws.String("t-" + strconv.Itoa(i))},
		}
	}
	var entries []types.SendMessageBatchRequestEntry
	for i := range 3 {
		entries = append(entries, types.SendMessageBatchRequestEntry{
			Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String("body-" + strconv.Itoa(i)), MessageAttributes: attrs(i),
		})
	}
	out, err := q.c.SendMessageBatch(q.ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
	if err != nil {
		t.Fatalf("SendMessageBatch: %v", err)
	}
	if len(out.Failed) != 0 || len(out.Successful) != 3 {
		t.Fatalf("SendMessageBatch: %d ok, failed %+v", len(out.Successful), out.Failed)
	}
	seen := map[string]bool{}
	for len(seen) < 3 {
		m := q.receive(t, url, 2, 30)
		if m == nil {
			t.Fatalf("received %d of 3 messages", len(seen))
		}
		var i int
		if _, err := fmt.Sscanf(*m.Body, "body-%d", &i); err != nil {
			t.Fatalf("unexpected body %q", *m.Body)
		}
		seen[*m.Body] = true
		want := attrs(i)
		if len(m.MessageAttributes) != len(want) {
			t.Errorf("%s: got %d attributes, want %d: %+v", *m.Body, len(m.MessageAttributes), len(want), m.MessageAttributes)
		}
		for k, w := range want {
			g, ok := m.MessageAttributes[k]
			switch {
			case !ok:
				t.Errorf("%s: attribute %s missing", *m.Body, k)
			case aws.ToString(g.DataType) != aws.ToString(w.DataType) ||
				aws.ToString(g.StringValue) != aws.ToString(w.StringValue) ||
				string(g.BinaryValue) != string(w.BinaryValue):
				t.Errorf("%s: attribute %s = {%s %q %v}, want {%s %q %v}", *m.Body, k,
					aws.ToString(g.DataType), aws.ToString(g.StringValue), g.BinaryValue,
					aws.ToString(w.DataType), aws.ToString(w.StringValue), w.BinaryValue)
			}
		}
	}
}

// (6) ChangeMessageVisibility: 0 releases the message at once, and a
// longer timeout extends the lease past the original one.
func testChangeMessageVisibility(t *testing.T, q sqsQueue) {
	url := q.create(t, "", nil)
	q.send(t, url, "cmv")
	m := q.receive(t, url, 0, 30)
	if m == nil {
		t.Fatal("no message")
	}
	if _, err := q.c.ChangeMessageVisibility(q.ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0,
	}); err != nil {
		t.Fatalf("ChangeMessageVisibility(0): %v", err)
	}
	m = q.receive(t, url, 1, 1)
	if m == nil {
		t.Fatal("message not visible right after ChangeMessageVisibility(0)")
	}
	// Extend the 1 s lease to 3 s: it must still be hidden at ~2 s. A
	// receive that answers 3 s or more after the extension was sent may
	// rightly see it (a loaded machine): that proves nothing either way.
	extended := time.Now()
	if _, err := q.c.ChangeMessageVisibility(q.ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 3,
	}); err != nil {
		t.Fatalf("ChangeMessageVisibility(3): %v", err)
	}
	time.Sleep(2 * time.Second)
	got := q.receive(t, url, 0, -1)
	switch after := time.Since(extended); {
	case got != nil && after < 3*time.Second:
		t.Fatalf("message visible %v after extending visibility to 3s", after)
	case got != nil:
		t.Logf("the check at ~2s answered only %v after the extension: visible again, rightly; not checked", after)
		return
	}
	got = q.pollUntilVisible(t, url, time.Minute, -1)
	if got == nil {
		t.Fatal("message never reappeared after the extended timeout")
	}
	t.Logf("reappeared %.2fs after ChangeMessageVisibility(3)", time.Since(extended).Seconds())
}

// testDynamoDB checks the DynamoDB features the receipt store depends on.
func testDynamoDB(ctx context.Context, t *testing.T, c *dynamodb.Client, table string) {
	_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          dtypes.BillingModePayPerRequest,
		AttributeDefinitions: []dtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: dtypes.ScalarAttributeTypeS}},
		KeySchema:            []dtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: dtypes.KeyTypeHash}},
	})
	if err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	if err := dynamodb.NewTableExistsWaiter(c).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, 30*time.Second); err != nil {
		t.Fatalf("wait for table: %v", err)
	}
	old := map[string]dtypes.AttributeValue{
		"pk":     &dtypes.AttributeValueMemberS{Value: "k1"},
		"status": &dtypes.AttributeValueMemberS{Value: "DONE"},
		"result": &dtypes.AttributeValueMemberB{Value: []byte("r")},
	}
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: old}); err != nil {
		t.Fatalf("PutItem: %v", err)
	}
	fresh := map[string]dtypes.AttributeValue{
		"pk":     &dtypes.AttributeValueMemberS{Value: "k1"},
		"status": &dtypes.AttributeValueMemberS{Value: "IN_PROGRESS"},
	}

	t.Run("ConditionalPutReturnsOldItem", func(t *testing.T) {
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                           aws.String(table),
			Item:                                fresh,
			ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
			ReturnValuesOnConditionCheckFailure: dtypes.ReturnValuesOnConditionCheckFailureAllOld,
		})
		var ccf *dtypes.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			t.Fatalf("PutItem error = %v, want ConditionalCheckFailedException", err)
		}
		checkOld(t, ccf.Item)
	})

	t.Run("TransactCancellationReturnsOldItem", func(t *testing.T) {
		_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
			TransactItems: []dtypes.TransactWriteItem{
				{Put: &dtypes.Put{
					TableName:                           aws.String(table),
					Item:                                fresh,
					ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
					ReturnValuesOnConditionCheckFailure: dtypes.ReturnValuesOnConditionCheckFailureAllOld,
				}},
				{Put: &dtypes.Put{
					TableName: aws.String(table),
					Item:      map[string]dtypes.AttributeValue{"pk": &dtypes.AttributeValueMemberS{Value: "k2"}},
				}},
			},
		})
		var tce *dtypes.TransactionCanceledException
		if !errors.As(err, &tce) {
			t.Fatalf("TransactWriteItems error = %v, want TransactionCanceledException", err)
		}
		if len(tce.CancellationReasons) != 2 {
			t.Fatalf("got %d cancellation reasons, want 2: %+v", len(tce.CancellationReasons), tce.CancellationReasons)
		}
		r0, r1 := tce.CancellationReasons[0], tce.CancellationReasons[1]
		if aws.ToString(r0.Code) != "ConditionalCheckFailed" {
			t.Errorf("reason[0].Code = %q, want ConditionalCheckFailed", aws.ToString(r0.Code))
		}
		t.Logf("reason[1].Code = %q (AWS: None)", aws.ToString(r1.Code))
		checkOld(t, r0.Item)
		// The transaction is all-or-nothing: k2 must not exist.
		got, err := c.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(table), Key: map[string]dtypes.AttributeValue{"pk": &dtypes.AttributeValueMemberS{Value: "k2"}}, ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			t.Fatalf("GetItem: %v", err)
		}
		if got.Item != nil {
			t.Error("k2 was written by a cancelled transaction")
		}
	})

	t.Run("UpdateTimeToLive", func(t *testing.T) {
		_, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
			TableName:               aws.String(table),
			TimeToLiveSpecification: &dtypes.TimeToLiveSpecification{AttributeName: aws.String("expiresAt"), Enabled: aws.Bool(true)},
		})
		if err != nil {
			t.Fatalf("UpdateTimeToLive: %v", err)
		}
		d, err := c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
		if err != nil {
			t.Fatalf("DescribeTimeToLive: %v", err)
		}
		t.Logf("DescribeTimeToLive: status=%s attribute=%s", d.TimeToLiveDescription.TimeToLiveStatus, aws.ToString(d.TimeToLiveDescription.AttributeName))
		if s := d.TimeToLiveDescription.TimeToLiveStatus; s != dtypes.TimeToLiveStatusEnabled && s != dtypes.TimeToLiveStatusEnabling {
			t.Errorf("TTL status %s, want ENABLED or ENABLING", s)
		}
	})
}

func checkOld(t *testing.T, item map[string]dtypes.AttributeValue) {
	t.Helper()
	s, ok := item["status"].(*dtypes.AttributeValueMemberS)
	if !ok || s.Value != "DONE" {
		t.Fatalf("old item = %#v, want status=DONE", item)
	}
	if b, ok := item["result"].(*dtypes.AttributeValueMemberB); !ok || string(b.Value) != "r" {
		t.Errorf("old item result = %#v, want B(r)", item["result"])
	}
}
