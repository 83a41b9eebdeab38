//go:build integration

package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/integration/internal/emu"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

// TestDynamoStore runs the conformance suite against DynamoDB Local, on a
// table with the default schema and on a single-table design (partition +
// sort key, one fixed partition value). The subtests of each share one
// receipt table: the suite gives each its own namespace.
func TestDynamoStore(t *testing.T) {
	ddbURL, sqsURL := dynamoEndpoint(t), sqsEndpoint(t)
	ctx := context.Background()
	client, _, err := emu.Clients(ctx, ddbURL, sqsURL)
	if err != nil {
		t.Fatal(err)
	}
	table := createReceiptTable(ctx, t, client)
	ledger := createLedgerTable(ctx, t, client)

	store, err := dynamostore.New(client, table)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("Schema=simple", func(t *testing.T) {
		idemtest.TestStore(t,
			func(*testing.T) idem.Store { return store },
			idemtest.WithCounter(ledgerIncrement(ledger), ledgerCount(client, ledger)),
		)
	})
	t.Run("Schema=composite", func(t *testing.T) {
		single := createSingleTable(ctx, t, client)
		composite, err := dynamostore.New(client, single, dynamostore.WithCompositeKey("PK", "SK", "IDEMPOTENCY"))
		if err != nil {
			t.Fatal(err)
		}
		idemtest.TestStore(t,
			func(*testing.T) idem.Store { return composite },
			idemtest.WithCounter(ledgerIncrement(ledger), ledgerCount(client, ledger)),
		)
	})
	t.Run("ResultRefusedForItsSize", func(t *testing.T) { testResultRefused(ctx, t, store, ledger, ledgerCount(client, ledger)) })

	t.Run("TxWriteConditionFails", func(t *testing.T) {
		// The effect's own condition fails: nothing is written, receipt
		// included, and the error names the write.
		g, err := idem.New(store, "txcond")
		if err != nil {
			t.Fatal(err)
		}
		check, err := expression.NewBuilder().
			WithCondition(expression.Name("n").AttributeExists()).
			Build()
		if err != nil {
			t.Fatal(err)
		}
		key := uniqueName("order")
		res, err := g.DoTx(ctx, key, nil, func(context.Context) (idem.TxEffect, error) {
			return idem.TxEffect{Writes: []any{
				ledgerIncrement(ledger)(key + "-a"),
				&types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
					TableName:                 aws.String(ledger),
					Key:                       map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: key + "-absent"}},
					ConditionExpression:       check.Condition(),
					ExpressionAttributeNames:  check.Names(),
					ExpressionAttributeValues: check.Values(),
				}},
			}}, nil
		})
		if !errors.Is(err, dynamostore.ErrWriteConditionFailed) || !strings.Contains(err.Error(), "write 1") || res.Outcome != idem.Failed {
			t.Fatalf("DoTx: %+v, %v; want ErrWriteConditionFailed on write 1", res, err)
		}
		if _, found, err := store.Get(ctx, g.StorageKey(key)); err != nil || found {
			t.Fatalf("receipt after a cancelled commit: found %v, %v", found, err)
		}
		if n, err := ledgerCount(client, ledger)(ctx, key+"-a"); err != nil || n != 0 {
			t.Fatalf("ledger after a cancelled commit: %d, %v", n, err)
		}
	})
}

// uniqueName returns a table name no earlier run in the same emulator used.
func uniqueName(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

// createReceiptTable creates a receipt table as infra/ does: key pk (S),
// on-demand, TTL on expiresAt.
func createReceiptTable(ctx context.Context, t testing.TB, client *dynamodb.Client) string {
	t.Helper()
	name := uniqueName("receipts")
	createTable(ctx, t, client, name, dynamostore.DefaultSchema.PartitionKey)
	_, err := client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(dynamostore.DefaultSchema.TTL),
			Enabled:       aws.Bool(true),
		},
	})
	if err != nil {
		t.Fatalf("enable TTL on %s: %v", name, err)
	}
	return name
}

// createSingleTable creates a single-table design's table: PK (S) and SK
// (S), TTL on expiresAt.
func createSingleTable(ctx context.Context, t testing.TB, client *dynamodb.Client) string {
	t.Helper()
	name := uniqueName("single")
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("PK"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("SK"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("PK"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("SK"), KeyType: types.KeyTypeRange},
		},
	})
	if err != nil {
		t.Fatalf("create table %s: %v", name, err)
	}
	if err := dynamodb.NewTableExistsWaiter(client).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, time.Minute); err != nil {
		t.Fatalf("wait for table %s: %v", name, err)
	}
	return name
}

// createLedgerTable creates the table the transactional effects write to:
// one counter item per id.
func createLedgerTable(ctx context.Context, t testing.TB, client *dynamodb.Client) string {
	t.Helper()
	name := uniqueName("ledger")
	createTable(ctx, t, client, name, "id")
	return name
}

func createTable(ctx context.Context, t testing.TB, client *dynamodb.Client, name, key string) {
	t.Helper()
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(key), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(key), KeyType: types.KeyTypeHash}},
	})
	if err != nil {
		t.Fatalf("create table %s: %v", name, err)
	}
	if err := dynamodb.NewTableExistsWaiter(client).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, time.Minute); err != nil {
		t.Fatalf("wait for table %s: %v", name, err)
	}
}

// ledgerIncrement returns the transactional effect of the suite: ADD n 1 on
// the ledger item id.
func ledgerIncrement(table string) func(id string) any {
	return func(id string) any {
		expr, err := expression.NewBuilder().
			WithUpdate(expression.Add(expression.Name("n"), expression.Value(1))).
			Build()
		if err != nil {
			panic(err) // constant expression: cannot fail
		}
		return types.TransactWriteItem{Update: &types.Update{
			TableName:                 aws.String(table),
			Key:                       map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}},
			UpdateExpression:          expr.Update(),
			ExpressionAttributeNames:  expr.Names(),
			ExpressionAttributeValues: expr.Values(),
		}}
	}
}

func ledgerCount(client *dynamodb.Client, table string) func(ctx context.Context, id string) (int, error) {
	return func(ctx context.Context, id string) (int, error) {
		out, err := client.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:      aws.String(table),
			Key:            map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}},
			ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			return 0, err
		}
		n, ok := out.Item["n"].(*types.AttributeValueMemberN)
		if !ok {
			return 0, nil
		}
		v, err := strconv.Atoi(n.Value)
		if err != nil {
			return 0, fmt.Errorf("ledger %s: n = %q: %w", id, n.Value, err)
		}
		return v, nil
	}
}
