//go:build integration

package ddbmodel

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// TestTransactionSameItem pins a difference the model does not tolerate:
// DynamoDB refuses a transaction with two actions on one item
// (ValidationException "Transaction request cannot include multiple
// operations on one item"), and so does the model. DynamoDB Local 3.3.1
// evaluates the actions in turn, each seeing the ones before, and refuses
// the request so only once every condition has passed: when one fails it
// cancels the transaction instead. dynamostore never sends such a request
// (it refuses a write on the receipt's item) and the random generator
// avoids them. Should DynamoDB Local change, this test says so.
func TestTransactionSameItem(t *testing.T) {
	model := New()
	createLocal(t, model, "same-item", "pk", "")
	one := map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}}
	// On an absent item, ADD makes n 1 and the check of n = 1 passes in
	// DynamoDB Local; on the item it made, n becomes 2 and the check fails.
	in := &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{TableName: aws.String("same-item"), Key: key("a"), UpdateExpression: aws.String("ADD n :one"), ExpressionAttributeValues: one}},
		{ConditionCheck: &types.ConditionCheck{TableName: aws.String("same-item"), Key: key("a"), ConditionExpression: aws.String("n = :one"), ExpressionAttributeValues: one}},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const refused = "Transaction request cannot include multiple operations on one item"
	var api smithy.APIError
	if _, err := local.TransactWriteItems(ctx, in); !errors.As(err, &api) || api.ErrorMessage() != refused {
		t.Errorf("DynamoDB Local, conditions passing: %v", err)
	}
	if _, err := local.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("same-item"), Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}, "n": &types.AttributeValueMemberN{Value: "1"}}}); err != nil {
		t.Fatal(err)
	}
	var tc *types.TransactionCanceledException
	if _, err := local.TransactWriteItems(ctx, in); !errors.As(err, &tc) {
		t.Errorf("DynamoDB Local, a condition failing: %v; it used to cancel the transaction", err)
	}
	if _, err := model.TransactWriteItems(ctx, in); !errors.As(err, &api) || api.ErrorMessage() != refused {
		t.Errorf("model: %v", err)
	}
}
