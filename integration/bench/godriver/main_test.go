package main

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestParse(t *testing.T) {
	a, err := parse([]string{"batch-new", "--endpoint", "http://x", "--table", "t", "-r", "3"})
	if err != nil {
		t.Fatal(err)
	}
	if a.workers != 10 || a.events != 3 || a.processor != "concurrent" || a.validation != "on" || a.keyPrefix == "" {
		t.Errorf("defaults: %+v", a)
	}
	a, err = parse([]string{"lease-dup", "--endpoint", "http://x", "--table", "t", "--messages", "7", "-w", "16"})
	if err != nil || a.workers != 16 || a.messages != 7 {
		t.Errorf("lease-dup: %+v %v", a, err)
	}
	for _, argv := range [][]string{
		{},
		{"--endpoint", "http://x", "lease-new"},
		{"nope", "--endpoint", "http://x", "--table", "t"},
		{"lease-new", "--table", "t"},
		{"batch-new", "--endpoint", "http://x", "--table", "t", "--processor", "sequential", "-w", "4"},
		{"lease-new", "--endpoint", "http://x", "--table", "t", "-n", "0"},
		{"lease-new", "--endpoint", "http://x", "--table", "t", "--validation", "maybe"},
	} {
		var u usageError
		if _, err := parse(argv); !errors.As(err, &u) {
			t.Errorf("parse(%q) = %v, want a usage error", argv, err)
		}
	}
}

func TestCheckEffects(t *testing.T) {
	keys := []string{"a", "b"}
	if got := checkEffects(true, keys, map[string]int{"a": 1, "b": 1}, 0, nil); got != "" {
		t.Errorf("all once: %q", got)
	}
	if got := checkEffects(true, keys, map[string]int{"a": 2, "b": 1}, 0, nil); got == "" {
		t.Error("a double effect passed")
	}
	if got := checkEffects(false, keys, map[string]int{"a": 1}, 0, nil); got == "" {
		t.Error("an effect on a duplicate passed")
	}
	if got := checkEffects(false, keys, nil, 1, errors.New("x")); got == "" {
		t.Error("a failed call passed")
	}
}

func TestParseFloor(t *testing.T) {
	for _, sc := range []string{"lease-new", "tx-new", "batch-new", "batch-tx-new"} {
		a, err := parse([]string{sc, "--endpoint", "http://x", "--table", "t", "--floor"})
		if err != nil || !a.floor {
			t.Errorf("%s --floor: %+v %v", sc, a, err)
		}
	}
	var u usageError
	if _, err := parse([]string{"lease-dup", "--endpoint", "http://x", "--table", "t", "--floor"}); !errors.As(err, &u) {
		t.Errorf("lease-dup --floor = %v, want a usage error (the floor replays new messages)", err)
	}
}

// The floor's copy of a captured request names the new message's items
// and nothing else changes; the captured request stays as it was.
func TestWithKeys(t *testing.T) {
	s := func(v string) *types.AttributeValueMemberS { return &types.AttributeValueMemberS{Value: v} }
	subst := map[string]string{"bench#old": "bench#new", "ledger#old": "ledger#new"}
	up := &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: map[string]types.AttributeValue{"id": s("bench#old")},
		UpdateExpression: aws.String("SET #s = :s")}
	got, n, err := withKeys(up, subst)
	if err != nil || n != 1 {
		t.Fatalf("UpdateItem: n %d, err %v", n, err)
	}
	if k := got.(*dynamodb.UpdateItemInput).Key["id"].(*types.AttributeValueMemberS).Value; k != "bench#new" {
		t.Errorf("UpdateItem key %q, want bench#new", k)
	}
	if up.Key["id"].(*types.AttributeValueMemberS).Value != "bench#old" || got.(*dynamodb.UpdateItemInput).UpdateExpression != up.UpdateExpression {
		t.Errorf("the captured request changed, or the copy lost its expression")
	}
	tx := &dynamodb.TransactWriteItemsInput{ClientRequestToken: aws.String("token-of-the-capture"), TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{Key: map[string]types.AttributeValue{"id": s("bench#old")}}},
		{Update: &types.Update{Key: map[string]types.AttributeValue{"id": s("ledger#old")}}},
		{Put: &types.Put{Item: map[string]types.AttributeValue{"id": s("bench#old"), "status": s("COMPLETED")}}},
	}}
	got, n, err = withKeys(tx, subst)
	if err != nil || n != 3 {
		t.Fatalf("TransactWriteItems: n %d, err %v", n, err)
	}
	c := got.(*dynamodb.TransactWriteItemsInput)
	if c.ClientRequestToken != nil {
		t.Error("the copy kept the capture's ClientRequestToken: DynamoDB refuses a token reused for another request")
	}
	for i, want := range []string{"bench#new", "ledger#new"} {
		if k := c.TransactItems[i].Update.Key["id"].(*types.AttributeValueMemberS).Value; k != want {
			t.Errorf("item %d key %q, want %q", i, k, want)
		}
	}
	if p := c.TransactItems[2].Put.Item; p["id"].(*types.AttributeValueMemberS).Value != "bench#new" || p["status"].(*types.AttributeValueMemberS).Value != "COMPLETED" {
		t.Errorf("put item %v", p)
	}
	if tx.TransactItems[0].Update.Key["id"].(*types.AttributeValueMemberS).Value != "bench#old" || tx.ClientRequestToken == nil {
		t.Error("the captured transaction changed")
	}
	if _, _, err := withKeys(&dynamodb.GetItemInput{}, subst); err == nil {
		t.Error("a GetItem replayed: the floor knows only what pkg/idem sends for a new message")
	}
}
