package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// fakeDB is a small in-memory DynamoDB that evaluates what this Store
// sends: the condition and update expressions of UpdateItem and of the
// Update and ConditionCheck actions of TransactWriteItems (all conditions
// against the state before, all or nothing, cancellation reasons as the SDK
// returns them), ReturnValues ALL_NEW, ReturnValuesOnConditionCheckFailure
// ALL_OLD, and GetItem. fakeAPI (store_test.go) answers scripted replies
// and cannot see a wrong condition; the simulator's integration/sim/ddbmodel
// is the full model, but this module cannot import the top module.
//
// Values are strings, int64 numbers, binaries and booleans; keys are
// strings. A request it does not understand fails the test that sent it
// (t.Errorf) and gets an error that is no DynamoDB answer; it never gets a
// made-up one. Not modelled: item sizes (400 KB), PutItem and DeleteItem,
// Put and Delete in transactions, ClientRequestToken (fakeDB never loses a
// reply, so nothing is sent again), TTL deletion, throttling, conflicts.
type fakeDB struct {
	t      testing.TB
	mu     sync.Mutex
	tables map[string]*fakeTable
}

// dbItem is an item: attribute name → value.
type dbItem = map[string]types.AttributeValue

type fakeTable struct {
	keyAttrs []string          // partition key, then sort key if any
	items    map[string]dbItem // by fakeTable.keyOf
	// before is each written item as it was before its last write (nil:
	// absent): what an eventually consistent read may return, so that a
	// read the Store needs consistent and sends without ConsistentRead
	// shows.
	before map[string]dbItem
}

// fakeTableSpec is a table of a fakeDB: its name, partition key and sort
// key ("" for none), all of type S.
type fakeTableSpec struct{ name, pk, sk string }

func newFakeDB(t testing.TB, tables ...fakeTableSpec) *fakeDB {
	db := &fakeDB{t: t, tables: map[string]*fakeTable{}}
	for _, spec := range tables {
		keys := []string{spec.pk}
		if spec.sk != "" {
			keys = append(keys, spec.sk)
		}
		db.tables[spec.name] = &fakeTable{keyAttrs: keys, items: map[string]dbItem{}, before: map[string]dbItem{}}
	}
	return db
}

var _ API = (*fakeDB)(nil)

// dbWrite is a parsed write of one item.
type dbWrite struct {
	t      *fakeTable
	k      string
	key    dbItem
	cond   dbCond         // nil: unconditional
	update []updateAction // nil: a ConditionCheck
}

// prepare parses a write on table's item key.
func (db *fakeDB) prepare(table *string, key dbItem, condition, update *string, names map[string]string, values dbItem) (*dbWrite, error) {
	t, ok := db.tables[aws.ToString(table)]
	if !ok {
		return nil, &types.ResourceNotFoundException{Message: aws.String("Cannot do operations on a non-existent table")}
	}
	k, err := t.keyOf(key)
	if err != nil {
		return nil, err
	}
	for _, v := range values {
		if err := checkValue(v); err != nil {
			return nil, err
		}
	}
	w := &dbWrite{t: t, k: k, key: key}
	p := &parser{names: names, values: values, used: map[string]bool{}}
	if condition != nil {
		if w.cond, err = p.condition(*condition); err != nil {
			return nil, err
		}
	}
	if update != nil {
		if w.update, err = p.update(*update); err != nil {
			return nil, err
		}
		written := map[string]bool{}
		for _, a := range w.update {
			switch {
			case written[a.name]:
				return nil, refused("Invalid UpdateExpression: Two document paths overlap with each other; path one: [" + a.name + "]")
			case t.isKey(a.name):
				return nil, refused("Cannot update attribute " + a.name + ". This attribute is part of the key")
			}
			written[a.name] = true
		}
	}
	return w, p.unused()
}

// keyOf checks key against the table's schema and returns its index.
func (t *fakeTable) keyOf(key dbItem) (string, error) {
	parts := make([]string, 0, len(t.keyAttrs))
	for _, a := range t.keyAttrs {
		s, ok := key[a].(*types.AttributeValueMemberS)
		if !ok || s.Value == "" {
			return "", refused("The provided key element does not match the schema")
		}
		parts = append(parts, s.Value)
	}
	if len(key) != len(t.keyAttrs) {
		return "", refused("The provided key element does not match the schema")
	}
	return strings.Join(parts, "\x00"), nil
}

func (t *fakeTable) isKey(name string) bool { return slices.Contains(t.keyAttrs, name) }

// run evaluates w on the table as it is: the item before, the item after
// (the item before for a ConditionCheck), whether the condition held, and
// an error of the update.
func (w *dbWrite) run() (old, next dbItem, held bool, err error) {
	old = w.t.items[w.k]
	if w.cond != nil && !w.cond(old) {
		return old, nil, false, nil
	}
	if w.update == nil {
		return old, old, true, nil
	}
	next, err = applyUpdate(w.update, old, w.key)
	return old, next, true, err
}

func (w *dbWrite) store(next dbItem) {
	w.t.before[w.k] = w.t.items[w.k]
	w.t.items[w.k] = next
}

// UpdateItem implements API.
func (db *fakeDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	out, err := db.updateItem(ctx, in)
	return out, db.fail("UpdateItem", err)
}

func (db *fakeDB) updateItem(ctx context.Context, in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case in.Expected != nil || in.AttributeUpdates != nil || in.ConditionalOperator != "":
		return nil, notModelled("UpdateItem's legacy parameters")
	case in.UpdateExpression == nil:
		return nil, notModelled("UpdateItem without an UpdateExpression")
	case in.ReturnValues != "" && in.ReturnValues != types.ReturnValueNone && in.ReturnValues != types.ReturnValueAllNew:
		return nil, notModelled("ReturnValues %s", in.ReturnValues)
	}
	if err := checkOnFailure(in.ReturnValuesOnConditionCheckFailure); err != nil {
		return nil, err
	}
	w, err := db.prepare(in.TableName, in.Key, in.ConditionExpression, in.UpdateExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	if err != nil {
		return nil, err
	}
	old, next, held, err := w.run()
	switch {
	case !held:
		e := &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
		if in.ReturnValuesOnConditionCheckFailure == types.ReturnValuesOnConditionCheckFailureAllOld {
			e.Item = cloneItem(old)
		}
		return nil, e
	case err != nil:
		return nil, err
	}
	w.store(next)
	out := &dynamodb.UpdateItemOutput{}
	if in.ReturnValues == types.ReturnValueAllNew {
		out.Attributes = cloneItem(next)
	}
	return out, nil
}

// GetItem implements API: the item, a copy; an eventually consistent read
// the item as it was before its last write.
func (db *fakeDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	out, err := db.getItem(ctx, in)
	return out, db.fail("GetItem", err)
}

func (db *fakeDB) getItem(ctx context.Context, in *dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) {
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case in.ProjectionExpression != nil || in.AttributesToGet != nil || in.ExpressionAttributeNames != nil:
		return nil, notModelled("GetItem with a projection")
	}
	t, ok := db.tables[aws.ToString(in.TableName)]
	if !ok {
		return nil, &types.ResourceNotFoundException{Message: aws.String("Cannot do operations on a non-existent table")}
	}
	k, err := t.keyOf(in.Key)
	if err != nil {
		return nil, err
	}
	it := t.items[k]
	if stale, ok := t.before[k]; ok && !aws.ToBool(in.ConsistentRead) {
		it = stale
	}
	return &dynamodb.GetItemOutput{Item: cloneItem(it)}, nil
}

func checkOnFailure(r types.ReturnValuesOnConditionCheckFailure) error {
	if r != "" && r != types.ReturnValuesOnConditionCheckFailureNone && r != types.ReturnValuesOnConditionCheckFailureAllOld {
		return notModelled("ReturnValuesOnConditionCheckFailure %s", r)
	}
	return nil
}

// fail shapes err as the SDK returns DynamoDB's errors (an
// *smithy.OperationError around it), and fails the test for a request
// fakeDB does not understand.
func (db *fakeDB) fail(op string, err error) error {
	if err == nil {
		return nil
	}
	var nm *notModelledError
	if errors.As(err, &nm) {
		db.t.Errorf("%s: %v", op, err)
	}
	return &smithy.OperationError{ServiceID: "DynamoDB", OperationName: op, Err: err}
}

// checkValue refuses, as not modelled, a value of a type fakeDB does not
// compare (sets, lists, maps, NULL) or a number that is not an int64.
func checkValue(v types.AttributeValue) error {
	switch v := v.(type) {
	case *types.AttributeValueMemberS, *types.AttributeValueMemberB, *types.AttributeValueMemberBOOL:
		return nil
	case *types.AttributeValueMemberN:
		if _, err := strconv.ParseInt(v.Value, 10, 64); err != nil {
			return notModelled("number %q (only int64 is modelled)", v.Value)
		}
		return nil
	}
	return notModelled("value of type %T", v)
}

// cloneItem copies an item (nil stays nil), so that nothing a caller holds
// aliases the table.
func cloneItem(it dbItem) dbItem {
	if it == nil {
		return nil
	}
	out := make(dbItem, len(it))
	for k, v := range it {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v types.AttributeValue) types.AttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return &types.AttributeValueMemberS{Value: v.Value}
	case *types.AttributeValueMemberN:
		return &types.AttributeValueMemberN{Value: v.Value}
	case *types.AttributeValueMemberB:
		return &types.AttributeValueMemberB{Value: append([]byte(nil), v.Value...)}
	case *types.AttributeValueMemberBOOL:
		return &types.AttributeValueMemberBOOL{Value: v.Value}
	}
	panic(fmt.Sprintf("fakedb: a value that was not checked: %T", v))
}
