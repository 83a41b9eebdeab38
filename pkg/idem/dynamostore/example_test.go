package dynamostore_test

import (
	"context"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
)

// A Guard over a DynamoDB table, in lease mode (any effect) and in
// transactional mode (an effect made of DynamoDB writes). It needs a table,
// so it has no output to check.
func Example() {
	ctx := context.Background()
	// In Lambda: cfg, err := config.LoadDefaultConfig(ctx) and
	// dynamodb.NewFromConfig(cfg).
	client := dynamodb.New(dynamodb.Options{Region: "eu-west-1"})
	// Create the store and the Guard once, outside the Lambda handler.
	store, err := dynamostore.New(client, "receipts")
	if err != nil {
		log.Fatal(err)
	}
	guard, err := idem.New(store, "gift-cards", idem.WithCache(1000))
	if err != nil {
		log.Fatal(err)
	}

	// Lease mode: the effect runs at most once per key while its receipt
	// lives; a duplicate gets the stored result back.
	res, err := guard.Do(ctx, "order-1234", []byte(`{"amount":10}`), func(ctx context.Context) ([]byte, error) {
		return []byte("card-5678"), nil // e.g. call the gift card API
	})
	fmt.Println(res.Outcome, string(res.Value), err)

	// Transactional mode: the effect is returned as writes and committed
	// with the receipt in one TransactWriteItems: exactly once, no window.
	res, err = guard.DoTx(ctx, "order-1234-points", nil, func(ctx context.Context) (idem.TxEffect, error) {
		add, err := expression.NewBuilder().
			WithUpdate(expression.Add(expression.Name("points"), expression.Value(100))).
			Build()
		if err != nil {
			return idem.TxEffect{}, err
		}
		return idem.TxEffect{Writes: []any{types.TransactWriteItem{Update: &types.Update{
			TableName:                 aws.String("points"),
			Key:                       map[string]types.AttributeValue{"customer": &types.AttributeValueMemberS{Value: "c-42"}},
			UpdateExpression:          add.Update(),
			ExpressionAttributeNames:  add.Names(),
			ExpressionAttributeValues: add.Values(),
		}}}}, nil
	})
	fmt.Println(res.Outcome, err)
}
