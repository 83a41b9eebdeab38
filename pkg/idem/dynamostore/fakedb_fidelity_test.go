package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// fakeDB's semantics where a careless fake would differ from DynamoDB (and
// from integration/sim/ddbmodel, checked against DynamoDB Local).

// errorsTB records what fakeDB reports to the test, to check it fails one.
type errorsTB struct {
	testing.TB
	errs []string
}

func (e *errorsTB) Errorf(format string, args ...any) {
	e.errs = append(e.errs, fmt.Sprintf(format, args...))
}

// conditionOn runs condition on the item {pk: k, a: S "b", n: N 9, z: BOOL
// true} with values :s S "b", :S S "B", :n N 10, :t BOOL true.
func conditionOn(t testing.TB, condition string) (bool, error) {
	db := newFakeDB(t, fakeTableSpec{"tbl", "pk", ""})
	db.tables["tbl"].items["k"] = dbItem{"pk": str("k"), "a": str("b"), "n": num(9), "z": avTrue}
	all := map[string]types.AttributeValue{":s": str("b"), ":S": str("B"), ":n": num(10), ":t": avTrue}
	names, values := map[string]string{}, dbItem{}
	toks, _ := lex(condition) // the placeholders it uses, if it lexes
	for _, tok := range toks {
		if strings.HasPrefix(tok, "#") && tok != "#undefined" {
			names[tok] = tok[1:]
		}
		if v, ok := all[tok]; ok {
			values[tok] = v
		}
	}
	values[":x"] = str("x") // the update's
	names["#w"] = "w"
	_, err := db.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String("tbl"), Key: dbItem{"pk": str("k")},
		ConditionExpression: aws.String(condition), UpdateExpression: aws.String("SET #w = :x"),
		ExpressionAttributeNames: names, ExpressionAttributeValues: values,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return false, nil
	}
	return err == nil, err
}

func TestFakeDBConditions(t *testing.T) {
	for _, tc := range []struct {
		condition string
		want      bool
	}{
		{"#n < :n", true}, // 9 < 10 as numbers; as strings "9" > "10"
		{"#n >= :n", false},
		{"#a = :s", true},
		{"#a > :S", true}, // bytewise: "b" > "B"
		{"#a <= :S", false},
		{"#missing = :s", false},
		{"#missing <> :s", true}, // the negation of =
		{"#missing < :n", false},
		{"#missing >= :n", false},
		{"#a < :n", false}, // different types
		{"#a <> :n", true},
		{"#z = :t", true},
		{"#z < :t", false}, // booleans have no order
		{"attribute_exists (#pk)", true},
		{"attribute_not_exists (#missing)", true},
		{"NOT #a = :s", false},
		{"#a = :S OR #a = :s AND #n > :n", false}, // AND binds tighter
		{"(#a = :S OR #a = :s) AND #n < :n", true},
		{"NOT (#a = :S) AND (#n < :n)", true},
	} {
		t.Run(tc.condition, func(t *testing.T) {
			got, err := conditionOn(t, tc.condition)
			if err != nil || got != tc.want {
				t.Fatalf("%q: %v, %v; want %v", tc.condition, got, err, tc.want)
			}
		})
	}
}

// What fakeDB does not understand fails the test; what DynamoDB refuses
// it refuses as DynamoDB does, with a ValidationException.
func TestFakeDBRefusals(t *testing.T) {
	for _, tc := range []struct {
		condition string
		loud      bool // fails the test: not modelled
	}{
		{"#a BETWEEN :s AND :S", true},
		{"begins_with(#a, :s)", true},
		{"size(#a) < :n", true},
		{"a = :s", true}, // a bare name
		{"#a.b = :s", true},
		{"#a = :s AND", true},
		{"#a = :undefined", false},
		{"#undefined = :s", false},
	} {
		t.Run(tc.condition, func(t *testing.T) {
			rec := &errorsTB{TB: t}
			_, err := conditionOn(rec, tc.condition)
			var api smithy.APIError
			switch {
			case err == nil:
				t.Fatalf("%q: answered", tc.condition)
			case tc.loud && len(rec.errs) == 0:
				t.Fatalf("%q: %v, and the test was not failed", tc.condition, err)
			case !tc.loud && (len(rec.errs) != 0 || !errors.As(err, &api) || api.ErrorCode() != "ValidationException"):
				t.Fatalf("%q: %v, test failed with %q; want a ValidationException only", tc.condition, err, rec.errs)
			}
		})
	}
	t.Run("unused value", func(t *testing.T) {
		db := newFakeDB(t, fakeTableSpec{"tbl", "pk", ""})
		_, err := db.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
			TableName: aws.String("tbl"), Key: dbItem{"pk": str("k")},
			UpdateExpression:          aws.String("SET #w = :x"),
			ExpressionAttributeNames:  map[string]string{"#w": "w"},
			ExpressionAttributeValues: dbItem{":x": str("x"), ":y": str("y")},
		})
		if err == nil || !strings.Contains(err.Error(), "unused") {
			t.Fatalf("UpdateItem with an unused value: %v, want refused", err)
		}
	})
}

// An update reads the item as it was; a transaction is all or nothing,
// its conditions read the state before it, and its cancellation says why
// each action failed, with the old item when asked.
func TestFakeDBUpdatesAndTransactions(t *testing.T) {
	ctx := context.Background()
	db := newFakeDB(t, fakeTableSpec{"tbl", "pk", ""})
	upd := func(expr string, values dbItem) (dbItem, error) {
		out, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String("tbl"), Key: dbItem{"pk": str("k")}, UpdateExpression: aws.String(expr),
			ExpressionAttributeNames: map[string]string{"#a": "a", "#b": "b", "#n": "n"}, ExpressionAttributeValues: values,
			ReturnValues: types.ReturnValueAllNew,
		})
		if err != nil {
			return nil, err
		}
		return out.Attributes, nil
	}
	it, err := upd("SET #a = :x, #b = if_not_exists(#a, :y) ADD #n :one", dbItem{":x": str("x"), ":y": str("y"), ":one": num(1)})
	if err != nil || it["a"].(*types.AttributeValueMemberS).Value != "x" || it["b"].(*types.AttributeValueMemberS).Value != "y" || it["n"].(*types.AttributeValueMemberN).Value != "1" {
		t.Fatalf("first update: %v, %v; want a x, b y (a was missing before), n 1", it, err)
	}
	it, err = upd("ADD #n :two REMOVE #a, #b", dbItem{":two": num(2)})
	if _, ok := it["a"]; err != nil || ok || it["n"].(*types.AttributeValueMemberN).Value != "3" {
		t.Fatalf("second update: %v, %v; want n 3, no a", it, err)
	}

	check := func(table, key, condition string) types.TransactWriteItem {
		return types.TransactWriteItem{Update: &types.Update{
			TableName: aws.String(table), Key: dbItem{"pk": str(key)},
			ConditionExpression: aws.String(condition), UpdateExpression: aws.String("ADD #n :one"),
			ExpressionAttributeNames: map[string]string{"#n": "n"}, ExpressionAttributeValues: dbItem{":one": num(1)},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}}
	}
	_, err = db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		check("tbl", "new", "attribute_not_exists (#n)"), check("tbl", "k", "attribute_not_exists (#n)"),
	}})
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) || len(tce.CancellationReasons) != 2 ||
		aws.ToString(tce.CancellationReasons[0].Code) != "None" || aws.ToString(tce.CancellationReasons[1].Code) != "ConditionalCheckFailed" ||
		tce.CancellationReasons[1].Item["n"].(*types.AttributeValueMemberN).Value != "3" {
		t.Fatalf("transaction with a failing condition: %v; want cancelled, reasons None and ConditionalCheckFailed with the old item", err)
	}
	if _, ok := db.tables["tbl"].items["new"]; ok {
		t.Fatal("a cancelled transaction wrote its first action")
	}
	if _, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		check("tbl", "new", "attribute_not_exists (#n)"), check("tbl", "k", "#n = :one"),
	}}); err == nil {
		t.Fatal("conditions on the state after the first action: want #n = 1 false on k (n is 3)")
	}
	if _, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		check("tbl", "new", "attribute_not_exists (#n)"), check("tbl", "k", "attribute_exists (#n)"),
	}}); err != nil {
		t.Fatalf("transaction: %v", err)
	}
	if n := db.tables["tbl"].items["k"]["n"].(*types.AttributeValueMemberN).Value; n != "4" {
		t.Fatalf("n = %s after the transaction, want 4", n)
	}

	stale, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("tbl"), Key: dbItem{"pk": str("k")}})
	if err != nil || stale.Item["n"].(*types.AttributeValueMemberN).Value != "3" {
		t.Fatalf("eventually consistent read: %v, %v; want the item before its last write (n 3)", stale.Item, err)
	}
}
