//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/integration/internal/emu"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
)

// TestOptionCombinations: every combination of options that dynamostore.New
// and idem.New accept works on a real table (DynamoDB Local) — an option
// that New takes and that then makes every request fail is a false error,
// as is a caller's mistake reported as a store outage. Each combination
// runs a new key, a duplicate, a failed effect and its retry, a
// transactional effect and its duplicate, and the longest key.
func TestOptionCombinations(t *testing.T) {
	emulatorsOnly(t)
	ctx := context.Background()
	client, _, err := emu.Clients(ctx, dynamoEndpoint(t), sqsEndpoint(t))
	if err != nil {
		t.Fatal(err)
	}
	ledger := createLedgerTable(ctx, t, client)
	// Attribute names DynamoDB reserves or that need escaping.
	custom := dynamostore.Names{PartitionKey: "key", TTL: "ttl", Status: "state", Lease: "fence token",
		LeaseUntil: "lease.until", Attempts: "count", Fingerprint: "hash", Result: "data", NoResult: "no-data",
		UpdatedAt: "timestamp", LastError: "error"}
	simple, customTable, single := createReceiptTable(ctx, t, client), uniqueName("custom"), createSingleTable(ctx, t, client)
	createTable(ctx, t, client, customTable, custom.PartitionKey)
	composite := dynamostore.WithCompositeKey("PK", "SK", "IDEMPOTENCY")
	stores := []struct {
		name  string
		table string
		opts  []dynamostore.Option
	}{
		{"default", simple, nil},
		{"schema", customTable, []dynamostore.Option{dynamostore.WithSchema(custom)}},
		{"composite", single, []dynamostore.Option{composite}},
		{"composite+schema", single, []dynamostore.Option{composite, dynamostore.WithSchema(custom)}},
		{"schema+composite", single, []dynamostore.Option{dynamostore.WithSchema(custom), composite}},
		{"backoff", simple, []dynamostore.Option{dynamostore.WithBackoff(func(int) time.Duration { return time.Millisecond })}},
	}
	guards := []struct {
		name string
		opts func(caps idem.Capabilities) []idem.Option
	}{
		{"default", func(idem.Capabilities) []idem.Option { return nil }},
		{"plain keys", func(idem.Capabilities) []idem.Option { return []idem.Option{idem.WithPlainKeys()} }},
		{"cache", func(idem.Capabilities) []idem.Option { return []idem.Option{idem.WithCache(10)} }},
		{"no results", func(idem.Capabilities) []idem.Option { return []idem.Option{idem.WithMaxResultSize(0)} }},
		{"largest results", func(c idem.Capabilities) []idem.Option { return []idem.Option{idem.WithMaxResultSize(c.MaxResultSize)} }},
		{"lease and margin", func(idem.Capabilities) []idem.Option {
			return []idem.Option{idem.WithLease(5 * time.Second), idem.WithSafetyMargin(time.Second)}
		}},
		{"short retention", func(idem.Capabilities) []idem.Option { return []idem.Option{idem.WithRetention(time.Second)} }},
		{"error text", func(idem.Capabilities) []idem.Option { return []idem.Option{idem.WithErrorText(error.Error)} }},
	}
	for _, st := range stores {
		store, err := dynamostore.New(client, st.table, st.opts...)
		if err != nil {
			t.Fatalf("%s: New: %v", st.name, err)
		}
		for _, gc := range guards {
			t.Run(st.name+"/"+gc.name, func(t *testing.T) {
				g, err := idem.New(store, uniqueName("ns"), gc.opts(store.Capabilities())...)
				if err != nil {
					t.Fatalf("idem.New: %v", err)
				}
				exercise(ctx, t, g, store, client, ledger)
			})
		}
	}
}

// exercise runs the cases of TestOptionCombinations on g.
func exercise(ctx context.Context, t *testing.T, g *idem.Guard, store *dynamostore.Store, client *dynamodb.Client, ledger string) {
	t.Helper()
	expect := func(what string, res idem.Result, err error, want idem.Outcome) {
		t.Helper()
		if errors.Is(err, idem.ErrStore) || res.Outcome != want {
			t.Fatalf("%s: %v, %v; want %v", what, res.Outcome, err, want)
		}
	}
	value := func(v string) idem.Func { return func(context.Context) ([]byte, error) { return []byte(v), nil } }

	key := uniqueName("order")
	res, err := g.Do(ctx, key, []byte("p"), value("v"))
	expect("new key", res, err, idem.Executed)
	res, err = g.Do(ctx, key, []byte("p"), value("w"))
	expect("duplicate", res, err, idem.Duplicate)

	failing := uniqueName("failing")
	res, err = g.Do(ctx, failing, nil, func(context.Context) ([]byte, error) {
		return nil, errors.New("the text of the error, and bytes DynamoDB keeps as strings only once made valid: \xff\xfe")
	})
	expect("failed effect", res, err, idem.Failed)
	// Not marked definite: its outcome is unknown, and the retry, which
	// no reconcile can settle it for, runs it again under the default
	// policy (Retry): a rerun, counted as one.
	res, err = g.Do(ctx, failing, nil, value("v"))
	expect("retry after the failure", res, err, idem.Rerun)

	tx := uniqueName("tx")
	txfn := func(context.Context) (idem.TxEffect, error) {
		return idem.TxEffect{Writes: []any{ledgerIncrement(ledger)(tx)}, Result: []byte("r")}, nil
	}
	res, err = g.DoTx(ctx, tx, nil, txfn)
	expect("transactional", res, err, idem.Executed)
	res, err = g.DoTx(ctx, tx, nil, txfn)
	expect("transactional duplicate", res, err, idem.Duplicate)
	if n, err := ledgerCount(client, ledger)(ctx, tx); err != nil || n != 1 {
		t.Fatalf("ledger %d, %v; want 1", n, err)
	}

	// The longest key: stored, or refused as the caller's mistake (a plain
	// key longer than a sort key takes) — never a store error.
	long := strings.Repeat("k", idem.MaxKeyLen)
	res, err = g.Do(ctx, long, nil, value("v"))
	want := idem.Executed
	if len(g.StorageKey(long)) > store.Capabilities().MaxKeySize {
		want = idem.Rejected
	}
	expect(fmt.Sprintf("a key of %d bytes", len(long)), res, err, want)
}

// TestCallerMistakesAreInvalid: a transactional write DynamoDB refuses as
// invalid is the caller's mistake — Rejected, idem.ErrInvalid — not a
// store outage (StoreError), which would fail whole SQS batches as if the
// table were down.
func TestCallerMistakesAreInvalid(t *testing.T) {
	emulatorsOnly(t)
	ctx := context.Background()
	client, _, err := emu.Clients(ctx, dynamoEndpoint(t), sqsEndpoint(t))
	if err != nil {
		t.Fatal(err)
	}
	store, err := dynamostore.New(client, createReceiptTable(ctx, t, client))
	if err != nil {
		t.Fatal(err)
	}
	ledger := createLedgerTable(ctx, t, client)
	g, err := idem.New(store, "mistakes")
	if err != nil {
		t.Fatal(err)
	}
	for name, write := range map[string]types.TransactWriteItem{
		"malformed expression": {Update: &types.Update{TableName: aws.String(ledger),
			Key:              map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "x"}},
			UpdateExpression: aws.String("ADD n :one :two")}},
		"key not the table's": {Update: &types.Update{TableName: aws.String(ledger),
			Key:                       map[string]types.AttributeValue{"wrong": &types.AttributeValueMemberS{Value: "x"}},
			UpdateExpression:          aws.String("ADD n :one"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}}}},
	} {
		t.Run(name, func(t *testing.T) {
			res, err := g.DoTx(ctx, uniqueName("order"), nil, func(context.Context) (idem.TxEffect, error) {
				return idem.TxEffect{Writes: []any{write}}, nil
			})
			if res.Outcome != idem.Rejected || !errors.Is(err, idem.ErrInvalid) || errors.Is(err, idem.ErrStore) {
				t.Fatalf("%v, %v; want Rejected with ErrInvalid, not a store error", res.Outcome, err)
			}
		})
	}
}
