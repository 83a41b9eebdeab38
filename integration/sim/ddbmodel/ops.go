package ddbmodel

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The single-item operations. The model ignores ctx and the options: it
// answers every request it is given (the simulator's wrapper decides about
// deadlines and faults), and has no retries to turn off.

// UpdateItem implements dynamostore.API: an upsert, conditional when the
// request says so.
func (s *Server) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out, err := s.updateItem(in)
	if err := s.finish("UpdateItem", in, err, func() any { return &dynamodb.UpdateItemOutput{Attributes: cloneItem(out.Attributes)} }); err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Server) updateItem(in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
	if err := checkReturnValues(in.ReturnValues, in.ReturnValuesOnConditionCheckFailure, true); err != nil {
		return nil, err
	}
	x, err := s.expressions(exprInput{
		condition: in.ConditionExpression, update: in.UpdateExpression,
		names: in.ExpressionAttributeNames, values: in.ExpressionAttributeValues,
		without: "UpdateExpression and ConditionExpression are null",
	})
	if err != nil {
		return nil, err
	}
	w, err := s.singleTarget(in.TableName, in.Key, x, actUpdate)
	if err != nil {
		return nil, err
	}
	old, next, f := s.evaluate(w)
	if f != nil {
		return nil, f.error(old, in.ReturnValuesOnConditionCheckFailure)
	}
	w.t.items[w.key] = next
	out := &dynamodb.UpdateItemOutput{}
	switch in.ReturnValues {
	case types.ReturnValueAllOld:
		out.Attributes = cloneItem(old)
	case types.ReturnValueAllNew:
		out.Attributes = cloneItem(next)
	case types.ReturnValueUpdatedOld:
		out.Attributes = cloneItem(x.updCtx.updated(updatePaths(x), old))
	case types.ReturnValueUpdatedNew:
		out.Attributes = cloneItem(x.updCtx.updated(updatePaths(x), next))
	}
	return out, nil
}

func updatePaths(x *exprs) []docPath {
	if x.upd == nil {
		return nil
	}
	return x.upd.paths
}

// PutItem replaces an item, conditional when the request says so.
func (s *Server) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out, err := s.putItem(in)
	if err := s.finish("PutItem", in, err, func() any { return &dynamodb.PutItemOutput{Attributes: cloneItem(out.Attributes)} }); err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Server) putItem(in *dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) {
	if err := checkReturnValues(in.ReturnValues, in.ReturnValuesOnConditionCheckFailure, false); err != nil {
		return nil, err
	}
	x, err := s.expressions(exprInput{
		condition: in.ConditionExpression,
		names:     in.ExpressionAttributeNames, values: in.ExpressionAttributeValues,
		without: "ConditionExpression is null",
	})
	if err != nil {
		return nil, err
	}
	w, err := s.singleTarget(in.TableName, in.Item, x, actPut)
	if err != nil {
		return nil, err
	}
	old, next, f := s.evaluate(w)
	if f != nil {
		return nil, f.error(old, in.ReturnValuesOnConditionCheckFailure)
	}
	w.t.items[w.key] = next
	out := &dynamodb.PutItemOutput{}
	if in.ReturnValues == types.ReturnValueAllOld {
		out.Attributes = cloneItem(old)
	}
	return out, nil
}

// DeleteItem deletes an item, conditional when the request says so.
func (s *Server) DeleteItem(_ context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out, err := s.deleteItem(in)
	if err := s.finish("DeleteItem", in, err, func() any { return &dynamodb.DeleteItemOutput{Attributes: cloneItem(out.Attributes)} }); err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Server) deleteItem(in *dynamodb.DeleteItemInput) (*dynamodb.DeleteItemOutput, error) {
	if err := checkReturnValues(in.ReturnValues, in.ReturnValuesOnConditionCheckFailure, false); err != nil {
		return nil, err
	}
	x, err := s.expressions(exprInput{
		condition: in.ConditionExpression,
		names:     in.ExpressionAttributeNames, values: in.ExpressionAttributeValues,
		without: "ConditionExpression is null",
	})
	if err != nil {
		return nil, err
	}
	w, err := s.singleTarget(in.TableName, in.Key, x, actDelete)
	if err != nil {
		return nil, err
	}
	old, _, f := s.evaluate(w)
	if f != nil {
		return nil, f.error(old, in.ReturnValuesOnConditionCheckFailure)
	}
	delete(w.t.items, w.key)
	out := &dynamodb.DeleteItemOutput{}
	if in.ReturnValues == types.ReturnValueAllOld {
		out.Attributes = cloneItem(old)
	}
	return out, nil
}

// GetItem implements dynamostore.API. Every read is consistent: there is
// one copy of the data.
func (s *Server) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out, err := s.getItem(in)
	if err := s.finish("GetItem", in, err, func() any { return &dynamodb.GetItemOutput{Item: cloneItem(out.Item)} }); err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Server) getItem(in *dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) {
	if in.ProjectionExpression != nil || in.AttributesToGet != nil || in.ExpressionAttributeNames != nil {
		return nil, notModelled("GetItem with a projection")
	}
	w, err := s.singleTarget(in.TableName, in.Key, nil, actCheck)
	if err != nil {
		return nil, err
	}
	return &dynamodb.GetItemOutput{Item: cloneItem(w.t.items[w.key])}, nil
}

// singleTarget is target for a single-item operation, which refuses an
// invalid key outright.
func (s *Server) singleTarget(tableName *string, it item, x *exprs, act action) (write, error) {
	w, invalid, err := s.target(tableName, it, x, act)
	if err == nil && invalid != "" {
		err = validation(invalid)
	}
	return w, err
}

// checkReturnValues refuses the values DynamoDB refuses; UPDATED_* and
// ALL_NEW only for an update.
func checkReturnValues(rv types.ReturnValue, onFailure types.ReturnValuesOnConditionCheckFailure, update bool) error {
	switch rv {
	case "", types.ReturnValueNone, types.ReturnValueAllOld:
	case types.ReturnValueAllNew, types.ReturnValueUpdatedOld, types.ReturnValueUpdatedNew:
		if !update {
			return validation("Return values set to invalid value")
		}
	default:
		return validation("Return values set to invalid value")
	}
	return checkOnFailure(onFailure)
}

func checkOnFailure(onFailure types.ReturnValuesOnConditionCheckFailure) error {
	switch onFailure {
	case "", types.ReturnValuesOnConditionCheckFailureNone, types.ReturnValuesOnConditionCheckFailureAllOld:
		return nil
	}
	return validation(fmt.Sprintf("1 validation error detected: Value '%s' at 'returnValuesOnConditionCheckFailure' failed to satisfy constraint: Member must satisfy enum value set: [ALL_OLD, NONE]", onFailure))
}
