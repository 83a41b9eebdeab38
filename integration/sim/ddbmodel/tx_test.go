package ddbmodel

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// txServer has table "t" (key pk) holding {pk: a, n: 1} and {pk: b, n: 2}.
func txServer(t *testing.T) *Server {
	t.Helper()
	srv := New()
	mustCreate(t, srv, "t", "pk", "")
	for _, it := range []attrs{{"pk": s("a"), "n": n("1")}, {"pk": s("b"), "n": n("2")}} {
		if _, err := srv.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("t"), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	return srv
}

func key(pk string) attrs { return attrs{"pk": s(pk)} }

func check(pk, cond string, values attrs) types.TransactWriteItem {
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: aws.String("t"), Key: key(pk),
		ConditionExpression: aws.String(cond), ExpressionAttributeValues: values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}}
}

func update(pk, upd, cond string, values attrs) types.TransactWriteItem {
	u := &types.Update{TableName: aws.String("t"), Key: key(pk), UpdateExpression: aws.String(upd), ExpressionAttributeValues: values}
	if cond != "" {
		u.ConditionExpression = aws.String(cond)
	}
	return types.TransactWriteItem{Update: u}
}

func transact(srv *Server, items ...types.TransactWriteItem) error {
	_, err := srv.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{TransactItems: items})
	return err
}

// dump renders the items of "t".
func dump(srv *Server) string {
	var parts []string
	for _, it := range srv.Items("t") {
		parts = append(parts, render(it))
	}
	return strings.Join(parts, " ")
}

func TestTransactionApplies(t *testing.T) {
	srv := txServer(t)
	one := attrs{":one": n("1")}
	err := transact(srv,
		update("a", "ADD n :one", "n = :one", one),
		check("b", "attribute_exists(n)", nil),
		types.TransactWriteItem{Put: &types.Put{TableName: aws.String("t"), Item: attrs{"pk": s("c"), "v": n("1.50")}}},
		types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String("t"), Key: key("zz")}},
	)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := dump(srv), `{"n":N2 "pk":S"a"} {"n":N2 "pk":S"b"} {"pk":S"c" "v":N1.5}`; got != want {
		t.Fatalf("table %s, want %s", got, want)
	}
}

func TestTransactionCancelled(t *testing.T) {
	srv := txServer(t)
	before := dump(srv)
	one := attrs{":one": n("1")}
	err := transact(srv,
		update("a", "ADD n :one", "", one),
		check("b", "n = :one", one),
		update("b2", "ADD n :one", "attribute_exists(n)", one),
	)
	var tc *types.TransactionCanceledException
	if !errors.As(err, &tc) {
		t.Fatalf("err %v, want TransactionCanceledException", err)
	}
	if got := aws.ToString(tc.Message); got != "Transaction cancelled, please refer cancellation reasons for specific reasons [None, ConditionalCheckFailed, ConditionalCheckFailed]" {
		t.Errorf("message %q", got)
	}
	var op *smithy.OperationError
	if !errors.As(err, &op) || op.OperationName != "TransactWriteItems" || op.ServiceID != "DynamoDB" {
		t.Errorf("err %v is not an operation error of TransactWriteItems", err)
	}
	want := []reason{
		{"None", "", ""},
		{"ConditionalCheckFailed", "The conditional request failed", `{"n":N2 "pk":S"b"}`}, // ALL_OLD
		{"ConditionalCheckFailed", "The conditional request failed", ""},                   // absent, and not asked
	}
	for i, r := range tc.CancellationReasons {
		got := reason{aws.ToString(r.Code), strings.TrimSuffix(aws.ToString(r.Message), "."), render(r.Item)}
		if got != want[i] {
			t.Errorf("reason %d: %+v, want %+v", i, got, want[i])
		}
	}
	if got := dump(srv); got != before {
		t.Errorf("a cancelled transaction changed the table: %s", got)
	}
}

func TestTransactionRefused(t *testing.T) {
	one := attrs{":one": n("1")}
	many := make([]types.TransactWriteItem, 101)
	for i := range many {
		many[i] = check(strings.Repeat("k", i+1), "attribute_exists(n)", nil)
	}
	for _, tc := range []struct {
		name  string
		items []types.TransactWriteItem
		want  string
	}{
		{"SameItem", []types.TransactWriteItem{update("a", "ADD n :one", "", one), check("a", "n = :one", one)}, "Transaction request cannot include multiple operations on one item"},
		{"None", nil, "1 validation error detected: Value '[]' at 'transactItems' failed to satisfy constraint: Member must have length greater than or equal to 1"},
		{"TooMany", many, "Member must have length less than or equal to 100"},
		{"NoAction", []types.TransactWriteItem{{}}, "Invalid Request: TransactWriteRequest should contain Delete or Put or Update request"},
		{"TwoActions", []types.TransactWriteItem{{ConditionCheck: check("a", "n = :one", one).ConditionCheck, Update: update("a", "ADD n :one", "", one).Update}}, "TransactItems can only contain one of Check, Put, Update or Delete"},
		{"BadExpression", []types.TransactWriteItem{update("a", "ADD n :one", "n = :two", one)}, "Invalid ConditionExpression: An expression attribute value used in expression is not defined; attribute value: :two"},
		{"PutTooLarge", []types.TransactWriteItem{{Put: &types.Put{TableName: aws.String("t"), Item: attrs{"pk": s("c"), "v": b(strings.Repeat("x", DefaultItemLimit))}}}}, msgPutTooLarge},
		{"WritesTooMuch", []types.TransactWriteItem{update("a", "SET v = :v", "", attrs{":v": b(strings.Repeat("x", DefaultItemLimit))})}, msgUpdateTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := txServer(t)
			before := dump(srv)
			var api smithy.APIError
			if err := transact(srv, tc.items...); !errors.As(err, &api) || api.ErrorCode() != "ValidationException" || api.ErrorMessage() != tc.want {
				t.Fatalf("err %v, want ValidationException %q", err, tc.want)
			}
			if got := dump(srv); got != before {
				t.Errorf("a refused transaction changed the table: %s", got)
			}
		})
	}
}

// An item that would grow too large, an update that fails on the item and
// a key that does not match the schema cancel the transaction with a
// ValidationError for the action.
func TestTransactionValidationErrors(t *testing.T) {
	srv := txServer(t)
	srv.SetItemLimit(20)
	err := transact(srv,
		update("a", "SET v = :v", "", attrs{":v": s("0123456789abcdef")}), // 23 bytes
		update("b", "SET v = n + :v", "", attrs{":v": n("1")}),
		types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: aws.String("t"), Key: attrs{"pk": n("1")}, ConditionExpression: aws.String("attribute_exists(n)")}},
		update("c", "SET v = m + :v", "", attrs{":v": n("1")}),
	)
	var tc *types.TransactionCanceledException
	if !errors.As(err, &tc) {
		t.Fatalf("err %v, want TransactionCanceledException", err)
	}
	var got []string
	for _, r := range tc.CancellationReasons {
		got = append(got, aws.ToString(r.Code)+": "+aws.ToString(r.Message))
	}
	want := []string{
		"ValidationError: " + msgUpdateTooLarge,
		"None: ",
		"ValidationError: One or more parameter values were invalid: Type mismatch for key",
		"ValidationError: " + msgNoAttribute,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("reasons\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A transaction that succeeded with a ClientRequestToken succeeds again
// without applying anything; another request with the token is refused; a
// cancelled one leaves its token unused.
func TestTransactionToken(t *testing.T) {
	srv := txServer(t)
	ctx := context.Background()
	in := func(cond string, v string) *dynamodb.TransactWriteItemsInput {
		return &dynamodb.TransactWriteItemsInput{ClientRequestToken: aws.String("tok"),
			TransactItems: []types.TransactWriteItem{update("c", "ADD n :v", cond, attrs{":v": n(v)})}}
	}
	var tc *types.TransactionCanceledException
	if _, err := srv.TransactWriteItems(ctx, in("attribute_exists(pk)", "1")); !errors.As(err, &tc) {
		t.Fatalf("first: %v, want cancelled", err)
	}
	for range 3 {
		if _, err := srv.TransactWriteItems(ctx, in("", "1")); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := srv.Get("t", key("c")); render(got) != `{"n":N1 "pk":S"c"}` {
		t.Errorf("item %s, want n applied once", render(got))
	}
	var mismatch *types.IdempotentParameterMismatchException
	if _, err := srv.TransactWriteItems(ctx, in("", "2")); !errors.As(err, &mismatch) {
		t.Errorf("other request with the token: %v", err)
	}
}

func TestTransactionUnknownTable(t *testing.T) {
	srv := txServer(t)
	var rnf *types.ResourceNotFoundException
	err := transact(srv, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: aws.String("nope"), Key: key("a"), ConditionExpression: aws.String("attribute_exists(n)")}})
	if !errors.As(err, &rnf) {
		t.Fatalf("err %v, want ResourceNotFoundException", err)
	}
}
