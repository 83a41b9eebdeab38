package main

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// fakeDynamo is one in-memory table. It evaluates the expressions idemctl
// builds (conjunctions of =, begins_with, attribute_exists and
// attribute_not_exists; SET and REMOVE), which is all a fake needs: the
// integration test runs the same code on DynamoDB Local.
type fakeDynamo struct {
	mu       sync.Mutex
	desc     *types.TableDescription // nil: the table does not exist
	items    map[string]map[string]types.AttributeValue
	pageSize int
	calls    map[string]int
	// beforeUpdate runs before an UpdateItem is evaluated (a race).
	beforeUpdate func()
	// lostAnswer makes the next UpdateItem land and answer as the SDK's
	// retry of it would, its first answer lost: the condition failed,
	// with the item the first attempt wrote.
	lostAnswer bool
}

var _ DynamoDB = (*fakeDynamo)(nil)

func newFakeDynamo(table string, keys ...string) *fakeDynamo {
	d := &fakeDynamo{items: map[string]map[string]types.AttributeValue{}, pageSize: 2, calls: map[string]int{}}
	d.desc = &types.TableDescription{TableName: aws.String(table), ItemCount: aws.Int64(0)}
	for i, k := range keys {
		kt := types.KeyTypeHash
		if i == 1 {
			kt = types.KeyTypeRange
		}
		d.desc.KeySchema = append(d.desc.KeySchema, types.KeySchemaElement{AttributeName: aws.String(k), KeyType: kt})
		d.desc.AttributeDefinitions = append(d.desc.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(k), AttributeType: types.ScalarAttributeTypeS})
	}
	return d
}

func (d *fakeDynamo) keyNames() []string {
	var out []string
	for _, k := range d.desc.KeySchema {
		out = append(out, aws.ToString(k.AttributeName))
	}
	return out
}

// id is the item's primary key as one string.
func (d *fakeDynamo) id(item map[string]types.AttributeValue) string {
	var parts []string
	for _, k := range d.keyNames() {
		if s, ok := item[k].(*types.AttributeValueMemberS); ok {
			parts = append(parts, s.Value)
		}
	}
	return strings.Join(parts, "\x00")
}

func (d *fakeDynamo) put(item map[string]types.AttributeValue) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.items[d.id(item)] = item
}

func (d *fakeDynamo) get(key map[string]types.AttributeValue) map[string]types.AttributeValue {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.items[d.id(key)]
}

func (d *fakeDynamo) count(op string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[op]
}

func (d *fakeDynamo) call(op string) error {
	d.calls[op]++
	if d.desc == nil {
		return &types.ResourceNotFoundException{Message: aws.String("Requested resource not found")}
	}
	return nil
}

func (d *fakeDynamo) DescribeTable(_ context.Context, in *dynamodb.DescribeTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.call("DescribeTable"); err != nil {
		return nil, err
	}
	desc := *d.desc
	desc.ItemCount = aws.Int64(int64(len(d.items)))
	return &dynamodb.DescribeTableOutput{Table: &desc}, nil
}

func (d *fakeDynamo) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.call("GetItem"); err != nil {
		return nil, err
	}
	return &dynamodb.GetItemOutput{Item: clone(d.items[d.id(in.Key)])}, nil
}

func (d *fakeDynamo) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if d.beforeUpdate != nil {
		d.beforeUpdate()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.call("UpdateItem"); err != nil {
		return nil, err
	}
	id := d.id(in.Key)
	old := d.items[id]
	if !holds(aws.ToString(in.ConditionExpression), in.ExpressionAttributeNames, in.ExpressionAttributeValues, old) {
		return nil, &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed"), Item: clone(old)}
	}
	item := clone(old)
	if item == nil {
		item = clone(in.Key)
	}
	apply(aws.ToString(in.UpdateExpression), in.ExpressionAttributeNames, in.ExpressionAttributeValues, item)
	d.items[id] = item
	if d.lostAnswer {
		d.lostAnswer = false
		return nil, &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed"), Item: clone(item)}
	}
	return &dynamodb.UpdateItemOutput{Attributes: clone(item)}, nil
}

func (d *fakeDynamo) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return nil, errors.New("fake: idemctl never commits transactions")
}

// Scan returns the items of the segment that pass the filter, pageSize
// items read per page (DynamoDB filters after reading a page).
func (d *fakeDynamo) Scan(_ context.Context, in *dynamodb.ScanInput, _ ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.call("Scan"); err != nil {
		return nil, err
	}
	var ids []string
	for id := range d.items {
		if in.TotalSegments == nil || segmentOf(id, int(*in.TotalSegments)) == int(aws.ToInt32(in.Segment)) {
			ids = append(ids, id)
		}
	}
	return d.page(ids, in.ExclusiveStartKey, in.Limit, aws.ToString(in.FilterExpression), in.ExpressionAttributeNames, in.ExpressionAttributeValues)
}

func (d *fakeDynamo) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.call("Query"); err != nil {
		return nil, err
	}
	var ids []string
	for id, item := range d.items {
		if holds(aws.ToString(in.KeyConditionExpression), in.ExpressionAttributeNames, in.ExpressionAttributeValues, item) {
			ids = append(ids, id)
		}
	}
	out, err := d.page(ids, in.ExclusiveStartKey, in.Limit, aws.ToString(in.FilterExpression), in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	if err != nil {
		return nil, err
	}
	return &dynamodb.QueryOutput{Items: out.Items, Count: out.Count, ScannedCount: out.ScannedCount, LastEvaluatedKey: out.LastEvaluatedKey}, nil
}

func (d *fakeDynamo) page(ids []string, start map[string]types.AttributeValue, limit *int32, filter string, names map[string]string, values map[string]types.AttributeValue) (*dynamodb.ScanOutput, error) {
	slices.Sort(ids)
	if start != nil {
		from := d.id(start)
		i, _ := slices.BinarySearch(ids, from)
		for i < len(ids) && ids[i] <= from {
			i++
		}
		ids = ids[i:]
	}
	n := d.pageSize
	if limit != nil {
		n = int(*limit)
	}
	out := &dynamodb.ScanOutput{}
	if len(ids) > n {
		last := d.items[ids[n-1]]
		out.LastEvaluatedKey = map[string]types.AttributeValue{}
		for _, k := range d.keyNames() {
			out.LastEvaluatedKey[k] = last[k]
		}
		ids = ids[:n]
	}
	for _, id := range ids {
		if filter == "" || holds(filter, names, values, d.items[id]) {
			out.Items = append(out.Items, clone(d.items[id]))
		}
	}
	out.Count, out.ScannedCount = int32(len(out.Items)), int32(len(ids))
	return out, nil
}

func segmentOf(id string, total int) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % uint32(total))
}

var (
	termExists    = regexp.MustCompile(`attribute_exists \((#\w+)\)`)
	termNotExists = regexp.MustCompile(`attribute_not_exists \((#\w+)\)`)
	termBegins    = regexp.MustCompile(`begins_with \((#\w+), (:\w+)\)`)
	termEquals    = regexp.MustCompile(`(#\w+) = (:\w+)`)
)

// holds evaluates a conjunction the expression package built on item
// (nil: no item).
func holds(cond string, names map[string]string, values map[string]types.AttributeValue, item map[string]types.AttributeValue) bool {
	if cond == "" {
		return true
	}
	if strings.Contains(cond, " OR ") || strings.Contains(cond, "NOT ") {
		panic("fake: only conjunctions: " + cond)
	}
	ok := true
	for _, m := range termExists.FindAllStringSubmatch(cond, -1) {
		_, has := item[names[m[1]]]
		ok = ok && has
	}
	for _, m := range termNotExists.FindAllStringSubmatch(cond, -1) {
		_, has := item[names[m[1]]]
		ok = ok && !has
	}
	for _, m := range termBegins.FindAllStringSubmatch(cond, -1) {
		s, isS := item[names[m[1]]].(*types.AttributeValueMemberS)
		ok = ok && isS && strings.HasPrefix(s.Value, values[m[2]].(*types.AttributeValueMemberS).Value)
	}
	for _, m := range termEquals.FindAllStringSubmatch(cond, -1) {
		ok = ok && equal(item[names[m[1]]], values[m[2]])
	}
	return ok
}

func equal(a, b types.AttributeValue) bool {
	switch x := a.(type) {
	case *types.AttributeValueMemberS:
		y, isS := b.(*types.AttributeValueMemberS)
		return isS && x.Value == y.Value
	case *types.AttributeValueMemberN:
		y, isN := b.(*types.AttributeValueMemberN)
		return isN && x.Value == y.Value
	}
	return false
}

// apply runs "SET #a = :b, ..." and "REMOVE #c, ..." clauses on item.
func apply(update string, names map[string]string, values map[string]types.AttributeValue, item map[string]types.AttributeValue) {
	for _, clause := range strings.Split(strings.TrimSpace(update), "\n") {
		verb, rest, _ := strings.Cut(clause, " ")
		for _, part := range strings.Split(rest, ", ") {
			switch verb {
			case "SET":
				n, v, _ := strings.Cut(part, " = ")
				item[names[n]] = values[v]
			case "REMOVE":
				delete(item, names[part])
			default:
				panic(fmt.Sprintf("fake: update clause %q", clause))
			}
		}
	}
}

func clone(item map[string]types.AttributeValue) map[string]types.AttributeValue {
	if item == nil {
		return nil
	}
	out := make(map[string]types.AttributeValue, len(item))
	for k, v := range item {
		out[k] = v
	}
	return out
}
