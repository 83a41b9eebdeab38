package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
)

// schema is the record layout idemctl reads: the one infra/exactlyonce
// creates its table from.
var schema = dynamostore.DefaultSchema

// receipts is one namespace of a receipt table.
type receipts struct {
	db        DynamoDB
	table     string
	namespace string
	// partitionKey is the table's partition key; sortKey and
	// partitionValue are set for a table with a sort key, whose records
	// all live under partitionValue (dynamostore.WithCompositeKey).
	partitionKey, sortKey, partitionValue string
	// store reads a record exactly as the library does; guard hashes keys
	// exactly as the consumer's Guard does.
	store *dynamostore.Store
	guard *idem.Guard
	// items is DynamoDB's approximate item count (updated every few
	// hours), for the progress bar.
	items int64
}

// openReceipts opens the table of r after checking that it is a receipt
// table: its key schema, then one of its items.
func (a *app) openReceipts(ctx context.Context, r resources) (*receipts, error) {
	if err := r.needTable(); err != nil {
		return nil, err
	}
	if err := validNamespace(r.namespace); err != nil {
		return nil, err
	}
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
	rc := &receipts{db: c.ddb, table: r.table, namespace: r.namespace, items: aws.ToInt64(out.Table.ItemCount)}
	if err := rc.keySchema(out.Table, a.partitionValue); err != nil {
		return nil, err
	}
	var sopts []dynamostore.Option
	if rc.sortKey != "" {
		sopts = append(sopts, dynamostore.WithCompositeKey(rc.partitionKey, rc.sortKey, rc.partitionValue))
	}
	if rc.store, err = dynamostore.New(c.ddb, r.table, sopts...); err != nil {
		return nil, usagef("%v", err)
	}
	var gopts []idem.Option
	if a.plainKeys {
		gopts = append(gopts, idem.WithPlainKeys())
	}
	if rc.guard, err = idem.New(rc.store, r.namespace, gopts...); err != nil {
		return nil, usagef("%v", err)
	}
	return rc, rc.sample(ctx)
}

// validNamespace refuses what no Guard takes, before any request.
func validNamespace(ns string) error {
	if ns == "" || len(ns) > idem.MaxNamespaceLen || strings.Contains(ns, idem.KeySeparator) || !utf8.ValidString(ns) {
		return usagef("namespace %q: 1 to %d bytes of UTF-8 without %q", ns, idem.MaxNamespaceLen, idem.KeySeparator)
	}
	return nil
}

// keySchema checks the table's key against the receipt table's: a string
// partition key named as in the schema, or a string partition and sort key
// with --partition-value.
func (rc *receipts) keySchema(t *types.TableDescription, partitionValue string) error {
	attrType := map[string]types.ScalarAttributeType{}
	for _, d := range t.AttributeDefinitions {
		attrType[aws.ToString(d.AttributeName)] = d.AttributeType
	}
	var hash, rng string
	for _, k := range t.KeySchema {
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
			return usagef("table %q has no sort key: --partition-value is for a table with one", rc.table)
		}
		rc.partitionKey = hash
		return nil
	case rng != "" && attrType[hash] == types.ScalarAttributeTypeS && attrType[rng] == types.ScalarAttributeTypeS:
		if partitionValue == "" {
			return usagef("table %q has a sort key (%s): pass --partition-value, the partition its records live under (dynamostore.WithCompositeKey)", rc.table, rng)
		}
		rc.partitionKey, rc.sortKey, rc.partitionValue = hash, rng, partitionValue
		return nil
	}
	return fmt.Errorf("%w: table %q: %s; a receipt table's is %s (S), or a string partition and sort key", errNotReceiptTable, rc.table, describe, schema.PartitionKey)
}

// sample reads one record of the table (of any namespace) and checks it is
// one dynamostore wrote. An empty table passes.
func (rc *receipts) sample(ctx context.Context) error {
	var items []map[string]types.AttributeValue
	if rc.sortKey == "" {
		out, err := rc.db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(rc.table), Limit: aws.Int32(1)})
		if err != nil {
			return fmt.Errorf("read table %q: %w", rc.table, err)
		}
		items = out.Items
	} else {
		x, err := rc.queryExpr("", "")
		if err != nil {
			return err
		}
		out, err := rc.db.Query(ctx, &dynamodb.QueryInput{
			TableName: aws.String(rc.table), Limit: aws.Int32(1), KeyConditionExpression: x.KeyCondition(),
			ExpressionAttributeNames: x.Names(), ExpressionAttributeValues: x.Values(),
		})
		if err != nil {
			return fmt.Errorf("read table %q: %w", rc.table, err)
		}
		items = out.Items
	}
	for _, item := range items {
		rec, err := rc.store.Decode(item)
		if err != nil || rec.Lease == "" || !knownStatus(rec.Status) || !strings.Contains(rec.Key, idem.KeySeparator) {
			return fmt.Errorf("%w: table %q holds an item that is not an idem record (no %s, %s and %s): check --table", errNotReceiptTable, rc.table, schema.Status, schema.Lease, rc.keyAttr())
		}
	}
	return nil
}

func knownStatus(s idem.Status) bool {
	switch s {
	case idem.StatusInProgress, idem.StatusCompleted, idem.StatusFailed, idem.StatusUnknown, idem.StatusHeld:
		return true
	}
	return false
}

// keyAttr is the attribute holding the storage key.
func (rc *receipts) keyAttr() string {
	if rc.sortKey != "" {
		return rc.sortKey
	}
	return rc.partitionKey
}

// key is the primary key of the record stored under skey.
func (rc *receipts) key(skey string) map[string]types.AttributeValue {
	if rc.sortKey != "" {
		return map[string]types.AttributeValue{
			rc.partitionKey: &types.AttributeValueMemberS{Value: rc.partitionValue},
			rc.sortKey:      &types.AttributeValueMemberS{Value: skey},
		}
	}
	return map[string]types.AttributeValue{rc.partitionKey: &types.AttributeValueMemberS{Value: skey}}
}

// prefix begins every storage key of the namespace.
func (rc *receipts) prefix() string { return rc.namespace + idem.KeySeparator }

// storageKey is the storage key of a key the operator typed: hashed as the
// consumer's Guard hashes it, or, with --storage-key, taken as it is (as
// `list` prints it and the consumer logs it as storage_key).
func (rc *receipts) storageKey(arg string, storage bool) (string, error) {
	if storage {
		if !strings.HasPrefix(arg, rc.prefix()) || len(arg) == len(rc.prefix()) {
			return "", usagef("storage key %q is not of namespace %q (%s…)", arg, rc.namespace, rc.prefix())
		}
		return arg, nil
	}
	switch {
	case arg == "":
		return "", usagef("empty key")
	case len(arg) > idem.MaxKeyLen:
		return "", usagef("a key of %d bytes: keys are at most %d", len(arg), idem.MaxKeyLen)
	case !utf8.ValidString(arg):
		return "", usagef("a key that is not UTF-8")
	}
	return rc.guard.StorageKey(arg), nil
}

// get reads the record under skey with a consistent read, expired or not.
func (rc *receipts) get(ctx context.Context, skey string) (idem.Record, bool, error) {
	return rc.store.Get(ctx, skey)
}
