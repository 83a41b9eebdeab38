package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
)

// schema is the record layout idemctl reads: the one infra/exactlyonce
// creates its table from.
var schema = dynamostore.DefaultSchema

// table is a receipt table: dynamostore's Store reads and resolves a
// record exactly as the library does; idemctl scans it itself (scan.go).
type table struct {
	*dynamostore.Store
	db        DynamoDB
	name      string
	namespace string
	// partitionKey is the table's partition key; sortKey and
	// partitionValue are set for a table with a sort key, whose records
	// all live under partitionValue (dynamostore.WithCompositeKey).
	partitionKey, sortKey, partitionValue string
}

var _ records = (*table)(nil)

// openTable opens the table of r after checking that it is a receipt
// table: its key schema, then one of its items.
func (a *app) openTable(ctx context.Context, r resources) (*receipts, error) {
	c, err := a.aws(ctx)
	if err != nil {
		return nil, err
	}
	out, err := c.ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(r.table)})
	var missing *types.ResourceNotFoundException
	if errors.As(err, &missing) {
		return nil, fmt.Errorf("%w: table %q does not exist in this account and region", errNotFound, r.table)
	}
	if err != nil {
		return nil, fmt.Errorf("describe table %q: %w", r.table, err)
	}
	t := &table{db: c.ddb, name: r.table, namespace: r.namespace}
	if err := t.keySchema(out.Table, a.partitionValue); err != nil {
		return nil, err
	}
	var sopts []dynamostore.Option
	if t.sortKey != "" {
		sopts = append(sopts, dynamostore.WithCompositeKey(t.partitionKey, t.sortKey, t.partitionValue))
	}
	if t.Store, err = dynamostore.New(c.ddb, r.table, sopts...); err != nil {
		return nil, usagef("%v", err)
	}
	g, err := a.newGuard(t.Store, r.namespace)
	if err != nil {
		return nil, err
	}
	rc := &receipts{records: t, namespace: r.namespace, guard: g, store: storeView{Table: r.table}, name: r.table,
		items: aws.ToInt64(out.Table.ItemCount)}
	return rc, t.sample(ctx)
}

// keySchema checks the table's key against the receipt table's: a string
// partition key named as in the schema, or a string partition and sort key
// with --partition-value.
func (t *table) keySchema(d *types.TableDescription, partitionValue string) error {
	attrType := map[string]types.ScalarAttributeType{}
	for _, a := range d.AttributeDefinitions {
		attrType[aws.ToString(a.AttributeName)] = a.AttributeType
	}
	var hash, rng string
	for _, k := range d.KeySchema {
		switch k.KeyType {
		case types.KeyTypeHash:
			hash = aws.ToString(k.AttributeName)
		case types.KeyTypeRange:
			rng = aws.ToString(k.AttributeName)
		}
	}
	describe := fmt.Sprintf("its key is %s (%s)", hash, attrType[hash])
	if rng != "" {
		describe += fmt.Sprintf(" and %s (%s)", rng, attrType[rng])
	}
	switch {
	case rng == "" && hash == schema.PartitionKey && attrType[hash] == types.ScalarAttributeTypeS:
		if partitionValue != "" {
			return usagef("table %q has no sort key: --partition-value is for a table with one", t.name)
		}
		t.partitionKey = hash
		return nil
	case rng != "" && attrType[hash] == types.ScalarAttributeTypeS && attrType[rng] == types.ScalarAttributeTypeS:
		if partitionValue == "" {
			return usagef("table %q has a sort key (%s): pass --partition-value, the partition its records live under (dynamostore.WithCompositeKey)", t.name, rng)
		}
		t.partitionKey, t.sortKey, t.partitionValue = hash, rng, partitionValue
		return nil
	}
	return fmt.Errorf("%w: table %q: %s; a receipt table's is %s (S), or a string partition and sort key", errNotReceiptTable, t.name, describe, schema.PartitionKey)
}

// sample reads one record of the table (of any namespace) and checks it is
// one dynamostore wrote. An empty table passes.
func (t *table) sample(ctx context.Context) error {
	var items []map[string]types.AttributeValue
	if t.sortKey == "" {
		out, err := t.db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(t.name), Limit: aws.Int32(1)})
		if err != nil {
			return fmt.Errorf("read table %q: %w", t.name, err)
		}
		items = out.Items
	} else {
		x, err := t.queryExpr("", "")
		if err != nil {
			return err
		}
		out, err := t.db.Query(ctx, &dynamodb.QueryInput{
			TableName: aws.String(t.name), Limit: aws.Int32(1), KeyConditionExpression: x.KeyCondition(),
			ExpressionAttributeNames: x.Names(), ExpressionAttributeValues: x.Values(),
		})
		if err != nil {
			return fmt.Errorf("read table %q: %w", t.name, err)
		}
		items = out.Items
	}
	for _, item := range items {
		rec, err := t.Decode(item)
		if err != nil || rec.Lease == "" || !knownStatus(rec.Status) || !strings.Contains(rec.Key, idem.KeySeparator) {
			return fmt.Errorf("%w: table %q holds an item that is not an idem record (no %s, %s and %s): check --table", errNotReceiptTable, t.name, schema.Status, schema.Lease, t.keyAttr())
		}
	}
	return nil
}

// keyAttr is the attribute holding the storage key.
func (t *table) keyAttr() string {
	if t.sortKey != "" {
		return t.sortKey
	}
	return t.partitionKey
}

// prefix begins every storage key of the namespace.
func (t *table) prefix() string { return t.namespace + idem.KeySeparator }
