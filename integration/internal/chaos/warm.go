package chaos

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/logging"
)

// Warm drives the request shapes of a run (conditional updates, ADDs,
// transactions; batch sends, receives with every attribute, batch deletes)
// straight at the emulators for d, on a scratch table and queue, so that
// their JIT has compiled the hot paths before the first message is sent. A
// cold JVM answers slowly for its first tens of seconds, long enough for
// invocations to overrun the test profile's 2 s timeout: without this, the
// start of every run measures the JIT, not the system.
func Warm(ctx context.Context, ddb *dynamodb.Client, mq *sqs.Client, d time.Duration) error {
	// Its requests fail on purpose, and some are cut off at the end.
	ddb = dynamodb.New(ddb.Options(), func(o *dynamodb.Options) { o.Logger = logging.Nop{} })
	mq = sqs.New(mq.Options(), func(o *sqs.Options) { o.Logger = logging.Nop{} })
	name := fmt.Sprintf("chaos-warmup-%d", time.Now().UnixNano())
	if _, err := ddb.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
	}); err != nil {
		return fmt.Errorf("chaos: warm-up table: %w", err)
	}
	defer ddb.DeleteTable(context.WithoutCancel(ctx), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	q, err := mq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		return fmt.Errorf("chaos: warm-up queue: %w", err)
	}
	defer mq.DeleteQueue(context.WithoutCancel(ctx), &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl})

	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			for i := 0; wctx.Err() == nil; i++ {
				warmDynamo(wctx, ddb, name, fmt.Sprintf("w%d-%d", w, i))
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for wctx.Err() == nil {
				warmSQS(wctx, mq, q.QueueUrl)
			}
		})
	}
	wg.Wait()
	return ctx.Err()
}

func warmDynamo(ctx context.Context, c *dynamodb.Client, table, key string) {
	pk := map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: key}}
	now := &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().UnixMilli(), 10)}
	acquire := &dynamodb.UpdateItemInput{
		TableName:                aws.String(table),
		Key:                      pk,
		UpdateExpression:         aws.String("SET #s = :p, leaseUntil = :now ADD attempts :one"),
		ConditionExpression:      aws.String("attribute_not_exists(pk) OR (#s = :p AND leaseUntil < :now)"),
		ExpressionAttributeNames: map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":p": &ddbtypes.AttributeValueMemberS{Value: "IN_PROGRESS"}, ":now": now, ":one": &ddbtypes.AttributeValueMemberN{Value: "1"},
		},
		ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
	}
	_, _ = c.UpdateItem(ctx, acquire)
	_, _ = c.UpdateItem(ctx, acquire) // fails its condition: the duplicate path
	_, _ = c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		{Update: &ddbtypes.Update{TableName: aws.String(table), Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: key + "-tx"}},
			UpdateExpression: aws.String("ADD issued :one"), ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":one": &ddbtypes.AttributeValueMemberN{Value: "1"}}}},
		{Update: &ddbtypes.Update{TableName: aws.String(table), Key: pk,
			UpdateExpression: aws.String("SET #s = :c"), ConditionExpression: aws.String("#s = :p"), ExpressionAttributeNames: map[string]string{"#s": "status"},
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":c": &ddbtypes.AttributeValueMemberS{Value: "COMPLETED"}, ":p": &ddbtypes.AttributeValueMemberS{Value: "IN_PROGRESS"}}}},
	}})
}

func warmSQS(ctx context.Context, c *sqs.Client, url *string) {
	var entries []sqstypes.SendMessageBatchRequestEntry
	for i := range 5 {
		entries = append(entries, sqstypes.SendMessageBatchRequestEntry{
			Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(`{"key":"warm","n":1}`),
			MessageAttributes: map[string]sqstypes.MessageAttributeValue{"key": {DataType: aws.String("String"), StringValue: aws.String("warm")}},
		})
	}
	if _, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: url, Entries: entries}); err != nil {
		return
	}
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: url, MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"},
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
	})
	if err != nil || len(out.Messages) == 0 {
		return
	}
	var del []sqstypes.DeleteMessageBatchRequestEntry
	for i, m := range out.Messages {
		del = append(del, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
	}
	_, _ = c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: url, Entries: del})
	_, _ = c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: url, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages}})
}
