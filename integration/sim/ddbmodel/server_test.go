package ddbmodel

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

func validationMessage(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() == "ValidationException" {
		return api.ErrorMessage()
	}
	return ""
}

// The model keeps copies: changing a request, or a reply, after the call
// changes nothing stored.
func TestCopies(t *testing.T) {
	srv := txServer(t)
	ctx := context.Background()
	in := attrs{"pk": s("c"), "b": b("xy"), "l": list(s("a")), "ss": ss("a")}
	if _, err := srv.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: in}); err != nil {
		t.Fatal(err)
	}
	in["b"].(*types.AttributeValueMemberB).Value[0] = 'X'
	in["l"].(*types.AttributeValueMemberL).Value[0] = n("1")
	in["ss"].(*types.AttributeValueMemberSS).Value[0] = "X"
	out, err := srv.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key("c")})
	if err != nil {
		t.Fatal(err)
	}
	out.Item["b"].(*types.AttributeValueMemberB).Value[1] = 'Y'
	out.Item["l"].(*types.AttributeValueMemberL).Value[0] = n("2")
	values := attrs{":v": b("vv")}
	if _, err := srv.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key("c"), UpdateExpression: aws.String("SET v = :v"), ExpressionAttributeValues: values}); err != nil {
		t.Fatal(err)
	}
	values[":v"].(*types.AttributeValueMemberB).Value[0] = 'W'
	got, _ := srv.Get("t", key("c"))
	if want := `{"b":B7879 "l":L[S"a"] "pk":S"c" "ss":SS["a"] "v":B7676}`; render(got) != want {
		t.Errorf("item %s, want %s", render(got), want)
	}
}

func TestKeys(t *testing.T) {
	srv := New()
	mustCreate(t, srv, "c", "pk", "sk")
	ctx := context.Background()
	for _, tc := range []struct {
		key  attrs
		want string
	}{
		{attrs{}, "The number of conditions on the keys is invalid"},
		{attrs{"pk": s("a")}, "The number of conditions on the keys is invalid"},
		{attrs{"pk": s("a"), "sk": s("b"), "x": s("c")}, "The number of conditions on the keys is invalid"},
		{attrs{"pk": s("a"), "x": s("c")}, "One of the required keys was not given a value"},
		{attrs{"pk": s("a"), "sk": b("b")}, "One or more parameter values were invalid: Type mismatch for key"},
		{attrs{"pk": s("a"), "sk": s("")}, "One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty string value. Key: sk"},
		{attrs{"pk": s(strings.Repeat("x", 2049)), "sk": s("b")}, "Hash primary key values must be under 2048 bytes, and range primary key values must be under 1024 bytes"},
		{attrs{"pk": s("a"), "sk": s(strings.Repeat("x", 1025))}, "Hash primary key values must be under 2048 bytes, and range primary key values must be under 1024 bytes"},
		{attrs{"pk": s(strings.Repeat("x", 2048)), "sk": s(strings.Repeat("x", 1024))}, ""},
	} {
		_, err := srv.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("c"), Key: tc.key})
		if got := validationMessage(err); got != tc.want || (tc.want == "") != (err == nil) {
			t.Errorf("key %s: %v, want %q", render(tc.key), err, tc.want)
		}
	}
	_, err := srv.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("c"), Item: attrs{"pk": s("a"), "x": s("b")}})
	if got := validationMessage(err); got != "One of the required keys was not given a value" {
		t.Errorf("put without the sort key: %v", err)
	}
	var rnf *types.ResourceNotFoundException
	if _, err := srv.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("nope"), Key: key("a")}); !errors.As(err, &rnf) {
		t.Errorf("unknown table: %v", err)
	}
}

func TestItemLimit(t *testing.T) {
	srv := txServer(t)
	ctx := context.Background()
	srv.SetItemLimit(20) // {pk: a, n: 1} is 6 bytes
	up := func(v string) error {
		_, err := srv.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key("a"), UpdateExpression: aws.String("SET v = :v"), ExpressionAttributeValues: attrs{":v": s(v)}})
		return err
	}
	if err := up(strings.Repeat("x", 13)); err != nil { // 6 + 1 + 13 = 20
		t.Fatalf("an item of exactly the limit: %v", err)
	}
	if err := up(strings.Repeat("x", 14)); validationMessage(err) != msgUpdateTooLarge {
		t.Fatalf("one byte over: %v", err)
	}
	_, err := srv.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: attrs{"pk": s("a"), "v": s(strings.Repeat("x", 17))}})
	if validationMessage(err) != msgPutTooLarge {
		t.Fatalf("put one byte over: %v", err)
	}
	got, _ := srv.Get("t", key("a"))
	if itemSize(got) != 20 {
		t.Errorf("item %s after refused writes", render(got))
	}
}

func TestConditionFailedItem(t *testing.T) {
	srv := txServer(t)
	ctx := context.Background()
	for _, tc := range []struct {
		pk        string
		onFailure types.ReturnValuesOnConditionCheckFailure
		want      string
	}{
		{"a", types.ReturnValuesOnConditionCheckFailureAllOld, `{"n":N1 "pk":S"a"}`},
		{"a", types.ReturnValuesOnConditionCheckFailureNone, ""},
		{"zz", types.ReturnValuesOnConditionCheckFailureAllOld, ""},
	} {
		_, err := srv.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key(tc.pk), UpdateExpression: aws.String("REMOVE n"),
			ConditionExpression: aws.String("n > :n"), ExpressionAttributeValues: attrs{":n": n("1")}, ReturnValuesOnConditionCheckFailure: tc.onFailure})
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) || render(ccf.Item) != tc.want || aws.ToString(ccf.Message) != msgConditionFailed {
			t.Errorf("%s %s: %v, item %s", tc.pk, tc.onFailure, err, render(ccf.Item))
		}
	}
	out, err := srv.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("t"), Key: key("a"), ConditionExpression: aws.String("n = :n"),
		ExpressionAttributeValues: attrs{":n": n("1")}, ReturnValues: types.ReturnValueAllOld})
	if err != nil || render(out.Attributes) != `{"n":N1 "pk":S"a"}` {
		t.Errorf("conditional delete: %v, %v", out, err)
	}
}

func TestNotModelled(t *testing.T) {
	srv := txServer(t)
	_, err := srv.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key("a"), ProjectionExpression: aws.String("n")})
	if !errors.Is(err, ErrNotModelled) {
		t.Errorf("projection: %v", err)
	}
}

// The recorder sees every request in order, with a copy of the reply.
func TestRecorder(t *testing.T) {
	srv := txServer(t)
	var calls []Call
	srv.SetRecorder(func(c Call) { calls = append(calls, c) })
	ctx := context.Background()
	out, _ := srv.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key("a")})
	out.Item["n"] = n("99")
	_, err := srv.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key("a"), ConditionExpression: aws.String("attribute_not_exists(pk)")})
	srv.SetRecorder(nil)
	if _, err := srv.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key("a")}); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || calls[0].Op != "GetItem" || calls[1].Op != "UpdateItem" || calls[1].Err == nil || calls[1].Output != nil {
		t.Fatalf("calls %+v", calls)
	}
	if got := render(calls[0].Output.(*dynamodb.GetItemOutput).Item); got != `{"n":N1 "pk":S"a"}` {
		t.Errorf("recorded reply %s", got)
	}
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(calls[1].Err, &ccf) || !errors.As(err, &ccf) {
		t.Errorf("recorded error %v, returned %v", calls[1].Err, err)
	}
}

// Concurrent increments all land: the model serialises requests.
func TestConcurrentUse(t *testing.T) {
	srv := txServer(t)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, err := srv.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key("a"),
					UpdateExpression: aws.String("ADD n :one"), ExpressionAttributeValues: attrs{":one": n("1")}})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got, _ := srv.Get("t", key("a")); render(got) != `{"n":N801 "pk":S"a"}` {
		t.Errorf("item %s after 800 increments", render(got))
	}
}
