package dynamostore

import (
	"context"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

// The real Store, on fakeDB, which evaluates its conditions, passes the
// library's conformance suite, for both key schemas, with transactional
// writes to a ledger table counted by the suite. (integration/sim/ddbmodel
// runs the same suite on the full model, and DynamoDB Local on the real
// thing; this is the unit tier's.)
func TestConformanceOnFakeDB(t *testing.T) {
	db := newFakeDB(t,
		fakeTableSpec{"receipts", "pk", ""},
		fakeTableSpec{"single", "PK", "SK"},
		fakeTableSpec{"ledger", "id", ""},
	)
	for _, tc := range []struct {
		name  string
		table string
		opts  []Option
	}{
		{"Schema=simple", "receipts", nil},
		{"Schema=composite", "single", []Option{WithCompositeKey("PK", "SK", "IDEMPOTENCY")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, err := New(db, tc.table, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			idemtest.TestStore(t,
				func(*testing.T) idem.Store { return store },
				idemtest.WithCounter(func(id string) any { return ledgerWrite(id) }, ledgerCount(db)),
			)
		})
	}
}

// ledgerCount reads the counter ledgerWrite (tx_test.go) increments.
func ledgerCount(api API) func(ctx context.Context, id string) (int, error) {
	return func(ctx context.Context, id string) (int, error) {
		out, err := api.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:      aws.String("ledger"),
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
		return strconv.Atoi(n.Value)
	}
}
