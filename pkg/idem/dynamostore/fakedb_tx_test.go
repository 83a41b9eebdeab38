package dynamostore

import (
	"context"
	"errors"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// fakeDB's transactions, as the Store's Commit sends them: Update and
// ConditionCheck actions, one per item, every condition evaluated against
// the state before the transaction, all or nothing, and a cancellation
// with one reason per action in order (None, ConditionalCheckFailed with
// the old item when ALL_OLD was asked, ValidationError), as
// integration/sim/ddbmodel's tx.go and errors.go shape them.

// TransactWriteItems implements API for Update and ConditionCheck actions.
func (db *fakeDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	err := db.transact(ctx, in)
	if err := db.fail("TransactWriteItems", err); err != nil {
		return nil, err
	}
	return &dynamodb.TransactWriteItemsOutput{}, nil
}

func (db *fakeDB) transact(ctx context.Context, in *dynamodb.TransactWriteItemsInput) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if n := len(in.TransactItems); n == 0 || n > 100 {
		return refused("Member must have length less than or equal to 100 and greater than or equal to 1")
	}
	writes := make([]*dbWrite, len(in.TransactItems))
	onFailure := make([]types.ReturnValuesOnConditionCheckFailure, len(in.TransactItems))
	seen := map[*fakeTable]map[string]bool{}
	for i, ti := range in.TransactItems {
		var err error
		switch u, c := ti.Update, ti.ConditionCheck; {
		case ti.Put != nil || ti.Delete != nil:
			return notModelled("Put and Delete in a transaction")
		case u != nil && c == nil && u.UpdateExpression != nil:
			onFailure[i] = u.ReturnValuesOnConditionCheckFailure
			writes[i], err = db.prepare(u.TableName, u.Key, u.ConditionExpression, u.UpdateExpression, u.ExpressionAttributeNames, u.ExpressionAttributeValues)
		case c != nil && u == nil && c.ConditionExpression != nil:
			onFailure[i] = c.ReturnValuesOnConditionCheckFailure
			writes[i], err = db.prepare(c.TableName, c.Key, c.ConditionExpression, nil, c.ExpressionAttributeNames, c.ExpressionAttributeValues)
		default:
			return refused("TransactItems can only contain one of Check, Put, Update or Delete, with its expression")
		}
		if err == nil {
			err = checkOnFailure(onFailure[i])
		}
		if err != nil {
			return err
		}
		w := writes[i]
		if seen[w.t] == nil {
			seen[w.t] = map[string]bool{}
		}
		if seen[w.t][w.k] {
			return refused("Transaction request cannot include multiple operations on one item")
		}
		seen[w.t][w.k] = true
	}
	// Every condition against the state before; then all or nothing.
	reasons := make([]types.CancellationReason, len(writes))
	nexts := make([]dbItem, len(writes))
	canceled := false
	for i, w := range writes {
		old, next, held, err := w.run()
		reasons[i] = types.CancellationReason{Code: aws.String("None")}
		switch {
		case !held:
			reasons[i] = types.CancellationReason{Code: aws.String("ConditionalCheckFailed"), Message: aws.String("The conditional request failed")}
			if onFailure[i] == types.ReturnValuesOnConditionCheckFailureAllOld {
				reasons[i].Item = cloneItem(old)
			}
			canceled = true
		case err != nil:
			var api smithy.APIError
			if !errors.As(err, &api) {
				return err
			}
			reasons[i] = types.CancellationReason{Code: aws.String("ValidationError"), Message: aws.String(api.ErrorMessage())}
			canceled = true
		}
		nexts[i] = next
	}
	if canceled {
		codes := make([]string, len(reasons))
		for i, r := range reasons {
			codes[i] = aws.ToString(r.Code)
		}
		return &types.TransactionCanceledException{
			Message:             aws.String("Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(codes, ", ") + "]"),
			CancellationReasons: reasons,
		}
	}
	for i, w := range writes {
		if w.update != nil {
			w.store(nexts[i])
		}
	}
	return nil
}
