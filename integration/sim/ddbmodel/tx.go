package ddbmodel

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// maxTxItems is DynamoDB's limit on the actions of a transaction.
const maxTxItems = 100

// TransactWriteItems implements dynamostore.API: all actions or none, every
// condition evaluated against the state before the transaction.
func (s *Server) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.transact(in)
	if err := s.finish("TransactWriteItems", in, err, func() any { return &dynamodb.TransactWriteItemsOutput{} }); err != nil {
		return nil, err
	}
	return &dynamodb.TransactWriteItemsOutput{}, nil
}

// txAction is an action with what it asked for on a failed condition.
type txAction struct {
	write
	onFailure types.ReturnValuesOnConditionCheckFailure
	// invalid is the message of a ValidationError for the action: its key
	// does not match the schema.
	invalid string
}

func (s *Server) transact(in *dynamodb.TransactWriteItemsInput) error {
	switch {
	case len(in.TransactItems) == 0:
		return validation("1 validation error detected: Value '[]' at 'transactItems' failed to satisfy constraint: Member must have length greater than or equal to 1")
	case len(in.TransactItems) > maxTxItems:
		return validation("Member must have length less than or equal to 100")
	}
	actions := make([]txAction, len(in.TransactItems))
	for i, ti := range in.TransactItems {
		a, err := s.txAction(ti)
		if err != nil {
			return err
		}
		actions[i] = a
	}
	// One action per item: a request naming an item twice is refused whole.
	seen := make(map[*table]map[itemKey]bool)
	for _, a := range actions {
		if a.invalid != "" {
			continue
		}
		if seen[a.t] == nil {
			seen[a.t] = map[itemKey]bool{}
		}
		if seen[a.t][a.key] {
			return validation("Transaction request cannot include multiple operations on one item")
		}
		seen[a.t][a.key] = true
	}
	var fingerprint string
	if in.ClientRequestToken != nil {
		fingerprint = txFingerprint(in)
		switch seen, ok := s.tokens[*in.ClientRequestToken]; {
		case ok && seen == fingerprint:
			return nil // done already: success, nothing applied
		case ok:
			return &types.IdempotentParameterMismatchException{Message: aws.String("")}
		}
	}
	reasons := make([]types.CancellationReason, len(actions))
	nexts := make([]item, len(actions))
	failed := false
	for i, a := range actions {
		reasons[i] = types.CancellationReason{Code: aws.String("None")}
		if a.invalid != "" {
			reasons[i] = types.CancellationReason{Code: aws.String("ValidationError"), Message: aws.String(a.invalid)}
			failed = true
			continue
		}
		old, next, f := s.evaluate(a.write)
		if f != nil {
			reasons[i] = f.reason(old, a.write, a.onFailure)
			failed = true
		}
		nexts[i] = next
	}
	if failed {
		return canceled(reasons)
	}
	for i, a := range actions {
		switch {
		case a.action == actCheck:
		case nexts[i] == nil:
			delete(a.t.items, a.key)
		default:
			a.t.items[a.key] = nexts[i]
		}
	}
	if in.ClientRequestToken != nil {
		s.tokens[*in.ClientRequestToken] = fingerprint
	}
	return nil
}

// txAction validates one item of a transaction: errors in its parameters
// or expressions refuse the whole request; a key that does not match the
// schema or an update of a key attribute cancel the transaction with a
// ValidationError for the action.
func (s *Server) txAction(ti types.TransactWriteItem) (txAction, error) {
	var (
		n         int
		act       action
		tableName *string
		key       item
		in        exprInput
		onFailure types.ReturnValuesOnConditionCheckFailure
	)
	if c := ti.ConditionCheck; c != nil {
		n, act, tableName, key, onFailure = n+1, actCheck, c.TableName, c.Key, c.ReturnValuesOnConditionCheckFailure
		in = exprInput{condition: c.ConditionExpression, names: c.ExpressionAttributeNames, values: c.ExpressionAttributeValues}
		if c.ConditionExpression == nil {
			return txAction{}, validation(missing("conditionCheck.conditionExpression"))
		}
	}
	if p := ti.Put; p != nil {
		n, act, tableName, key, onFailure = n+1, actPut, p.TableName, p.Item, p.ReturnValuesOnConditionCheckFailure
		in = exprInput{condition: p.ConditionExpression, names: p.ExpressionAttributeNames, values: p.ExpressionAttributeValues}
	}
	if d := ti.Delete; d != nil {
		n, act, tableName, key, onFailure = n+1, actDelete, d.TableName, d.Key, d.ReturnValuesOnConditionCheckFailure
		in = exprInput{condition: d.ConditionExpression, names: d.ExpressionAttributeNames, values: d.ExpressionAttributeValues}
	}
	if u := ti.Update; u != nil {
		n, act, tableName, key, onFailure = n+1, actUpdate, u.TableName, u.Key, u.ReturnValuesOnConditionCheckFailure
		in = exprInput{condition: u.ConditionExpression, update: u.UpdateExpression, names: u.ExpressionAttributeNames, values: u.ExpressionAttributeValues}
		if u.UpdateExpression == nil {
			return txAction{}, validation(missing("update.updateExpression"))
		}
	}
	switch {
	case n == 0:
		return txAction{}, validation("Invalid Request: TransactWriteRequest should contain Delete or Put or Update request")
	case n > 1:
		return txAction{}, validation("TransactItems can only contain one of Check, Put, Update or Delete")
	}
	if err := checkOnFailure(onFailure); err != nil {
		return txAction{}, err
	}
	in.without = "ConditionExpression is null"
	x, err := s.expressions(in)
	if err != nil {
		return txAction{}, err
	}
	w, invalid, err := s.target(tableName, key, x, act)
	if err != nil {
		return txAction{}, err
	}
	return txAction{write: w, onFailure: onFailure, invalid: invalid}, nil
}

// missing is the message for a required member left out.
func missing(member string) string {
	return fmt.Sprintf("1 validation error detected: Value null at 'transactItems.member.%s' failed to satisfy constraint: Member must not be null", member)
}
