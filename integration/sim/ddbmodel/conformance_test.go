package ddbmodel

import (
	"context"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

// The real dynamostore.Store, on the model, passes the library's
// conformance suite, with transactional writes to a ledger table counted
// by the suite, for both key schemas.
func TestConformance(t *testing.T) {
	srv := New()
	mustCreate(t, srv, "receipts", "pk", "")
	mustCreate(t, srv, "single", "PK", "SK")
	mustCreate(t, srv, "ledger", "id", "")
	for _, tc := range []struct {
		name  string
		table string
		opts  []dynamostore.Option
	}{
		{"Schema=simple", "receipts", nil},
		{"Schema=composite", "single", []dynamostore.Option{dynamostore.WithCompositeKey("PK", "SK", "IDEMPOTENCY")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, err := dynamostore.New(srv, tc.table, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			idemtest.TestStore(t,
				func(*testing.T) idem.Store { return store },
				idemtest.WithCounter(ledgerIncrement("ledger"), ledgerCount(srv, "ledger")),
			)
		})
	}
}

func mustCreate(t testing.TB, srv *Server, name, pk, sk string) {
	t.Helper()
	if err := srv.CreateTable(name, pk, sk); err != nil {
		t.Fatal(err)
	}
}

// ledgerIncrement is the suite's transactional effect: ADD n 1 on the
// ledger item id, built with the expression package as a user would.
func ledgerIncrement(table string) func(id string) any {
	return func(id string) any {
		x, err := expression.NewBuilder().WithUpdate(expression.Add(expression.Name("n"), expression.Value(1))).Build()
		if err != nil {
			panic(err) // a constant expression
		}
		return types.TransactWriteItem{Update: &types.Update{
			TableName:                 aws.String(table),
			Key:                       map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}},
			UpdateExpression:          x.Update(),
			ExpressionAttributeNames:  x.Names(),
			ExpressionAttributeValues: x.Values(),
		}}
	}
}

func ledgerCount(api dynamostore.API, table string) func(ctx context.Context, id string) (int, error) {
	return func(ctx context.Context, id string) (int, error) {
		out, err := api.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(table),
			Key:       map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}},
		})
		if err != nil {
			return 0, err
		}
		n, ok := out.Item["n"].(*types.AttributeValueMemberN)
		if !ok {
			return 0, nil
		}
		return strconv.Atoi(n.Value)
	}
}
