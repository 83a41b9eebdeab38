package ddbmodel

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// generator makes random requests from a small vocabulary (a few keys and
// attributes of every type), with expressions built by the expression
// package: every comparator and function, SET/ADD/REMOVE/DELETE,
// transactions of 1-4 actions, conditions that fail, and some requests
// DynamoDB refuses (operand types, BETWEEN bounds, a path compared with
// itself, overlapping paths, a key attribute updated).
type generator struct {
	r      *rand.Rand
	tables []genTable
}

type genTable struct{ name, pk, sk string }

func newGenerator(seed uint64, tables []genTable) *generator {
	return &generator{r: rand.New(rand.NewPCG(seed, 0x5eed)), tables: tables}
}

func (g *generator) pick(n int) int        { return g.r.IntN(n) }
func (g *generator) chance(p float64) bool { return g.r.Float64() < p }

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
func b(v string) types.AttributeValue { return &types.AttributeValueMemberB{Value: []byte(v)} }

var (
	genNames   = []string{"s", "n", "b", "t", "l", "m", "ss", "ns", "status"}
	genStrings = []string{"", "a", "ab", "abc", "b", "héllo", "z"}
	genNumbers = []string{"0", "1", "-1", "1.5", "2", "10", "100", "0.25", "-0.5", "1e2", "1.50", "007"}
	genBytes   = []string{"", "a", "ab", "\x00", "\xff\x01"}
)

func (g *generator) value() types.AttributeValue {
	switch g.pick(14) {
	case 0, 1, 2:
		return s(genStrings[g.pick(len(genStrings))])
	case 3, 4, 5, 6:
		return n(genNumbers[g.pick(len(genNumbers))])
	case 7, 8:
		return b(genBytes[g.pick(len(genBytes))])
	case 9:
		return &types.AttributeValueMemberBOOL{Value: g.chance(0.5)}
	case 10:
		return &types.AttributeValueMemberNULL{Value: true}
	case 11:
		return [...]types.AttributeValue{
			&types.AttributeValueMemberL{Value: []types.AttributeValue{s("a"), n("1")}},
			&types.AttributeValueMemberL{Value: []types.AttributeValue{}},
			&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": s("a")}},
			&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": n("1"), "j": &types.AttributeValueMemberBOOL{Value: true}}},
		}[g.pick(4)]
	}
	return g.set()
}

func (g *generator) set() types.AttributeValue {
	return [...]types.AttributeValue{
		&types.AttributeValueMemberSS{Value: []string{"a"}},
		&types.AttributeValueMemberSS{Value: []string{"b", "a"}},
		&types.AttributeValueMemberNS{Value: []string{"1"}},
		&types.AttributeValueMemberNS{Value: []string{"2.5", "-1", "1.0"}},
		&types.AttributeValueMemberBS{Value: [][]byte{[]byte("a"), []byte("b")}},
	}[g.pick(5)]
}

func (g *generator) scalar() types.AttributeValue {
	if g.chance(0.6) {
		return n(genNumbers[g.pick(len(genNumbers))])
	}
	return s(genStrings[g.pick(len(genStrings))])
}

// name is an attribute path: mostly top-level, sometimes into the map or
// the list.
func (g *generator) name() expression.NameBuilder {
	switch g.pick(12) {
	case 0:
		return expression.Name("m.k")
	case 1:
		return expression.Name(fmt.Sprintf("l[%d]", g.pick(3)))
	}
	return expression.Name(genNames[g.pick(len(genNames))])
}

func (g *generator) table() genTable { return g.tables[g.pick(len(g.tables))] }

func (g *generator) key(t genTable) map[string]types.AttributeValue {
	k := map[string]types.AttributeValue{t.pk: s([]string{"a", "b", "c"}[g.pick(3)])}
	if t.sk != "" {
		k[t.sk] = s([]string{"x", "y"}[g.pick(2)])
	}
	return k
}

func (g *generator) item(t genTable) map[string]types.AttributeValue {
	it := g.key(t)
	for range g.pick(5) {
		it[genNames[g.pick(len(genNames))]] = g.value()
	}
	return it
}

func (g *generator) returnValues(update bool) types.ReturnValue {
	if update {
		return []types.ReturnValue{"", "NONE", "ALL_OLD", "ALL_NEW", "UPDATED_OLD", "UPDATED_NEW"}[g.pick(6)]
	}
	return []types.ReturnValue{"", "NONE", "ALL_OLD"}[g.pick(3)]
}

func (g *generator) onFailure() types.ReturnValuesOnConditionCheckFailure {
	return []types.ReturnValuesOnConditionCheckFailure{"", "NONE", "ALL_OLD"}[g.pick(3)]
}

// built is a built expression, or nothing.
type built struct {
	cond, update *string
	names        map[string]string
	values       map[string]types.AttributeValue
}

func (g *generator) build(cond bool, update *expression.UpdateBuilder) (built, bool) {
	bld := expression.NewBuilder()
	if cond {
		bld = bld.WithCondition(g.cond(2))
	}
	if update != nil {
		bld = bld.WithUpdate(*update)
	}
	if !cond && update == nil {
		return built{}, true
	}
	x, err := bld.Build()
	if err != nil {
		return built{}, false
	}
	return built{x.Condition(), x.Update(), x.Names(), x.Values()}, true
}

// request returns a random request: its operation and input.
func (g *generator) request() (string, any) {
	for {
		t := g.table()
		switch k := g.pick(100); {
		case k < 35:
			u := g.update(t)
			var x built
			var ok bool
			if g.chance(0.1) {
				x, ok = g.build(true, nil)
			} else {
				x, ok = g.build(g.chance(0.5), &u)
			}
			if !ok {
				continue
			}
			return "UpdateItem", &dynamodb.UpdateItemInput{
				TableName: aws.String(t.name), Key: g.key(t),
				UpdateExpression: x.update, ConditionExpression: x.cond,
				ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
				ReturnValues: g.returnValues(true), ReturnValuesOnConditionCheckFailure: g.onFailure(),
			}
		case k < 50:
			x, ok := g.build(g.chance(0.4), nil)
			if !ok {
				continue
			}
			return "PutItem", &dynamodb.PutItemInput{
				TableName: aws.String(t.name), Item: g.item(t), ConditionExpression: x.cond,
				ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
				ReturnValues: g.returnValues(false), ReturnValuesOnConditionCheckFailure: g.onFailure(),
			}
		case k < 58:
			x, ok := g.build(g.chance(0.4), nil)
			if !ok {
				continue
			}
			return "DeleteItem", &dynamodb.DeleteItemInput{
				TableName: aws.String(t.name), Key: g.key(t), ConditionExpression: x.cond,
				ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
				ReturnValues: g.returnValues(false), ReturnValuesOnConditionCheckFailure: g.onFailure(),
			}
		case k < 70:
			return "GetItem", &dynamodb.GetItemInput{TableName: aws.String(t.name), Key: g.key(t), ConsistentRead: aws.Bool(true)}
		default:
			if in, ok := g.transaction(); ok {
				return "TransactWriteItems", in
			}
		}
	}
}

// transaction is 1-4 actions on distinct items (DynamoDB refuses two on
// one item; DynamoDB Local not always, see TestTransactionSameItem).
func (g *generator) transaction() (*dynamodb.TransactWriteItemsInput, bool) {
	in := &dynamodb.TransactWriteItemsInput{}
	var seen []string
	for range 1 + g.pick(4) {
		t := g.table()
		key := g.key(t)
		id := t.name + render(key)
		if slices.Contains(seen, id) {
			continue
		}
		seen = append(seen, id)
		var ti types.TransactWriteItem
		switch g.pick(4) {
		case 0:
			x, ok := g.build(true, nil)
			if !ok {
				return nil, false
			}
			ti.ConditionCheck = &types.ConditionCheck{TableName: aws.String(t.name), Key: key, ConditionExpression: x.cond,
				ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values, ReturnValuesOnConditionCheckFailure: g.onFailure()}
		case 1:
			x, ok := g.build(g.chance(0.5), nil)
			if !ok {
				return nil, false
			}
			it := g.item(t)
			for k, v := range key {
				it[k] = v
			}
			ti.Put = &types.Put{TableName: aws.String(t.name), Item: it, ConditionExpression: x.cond,
				ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values, ReturnValuesOnConditionCheckFailure: g.onFailure()}
		case 2:
			u := g.update(t)
			x, ok := g.build(g.chance(0.5), &u)
			if !ok {
				return nil, false
			}
			ti.Update = &types.Update{TableName: aws.String(t.name), Key: key, UpdateExpression: x.update, ConditionExpression: x.cond,
				ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values, ReturnValuesOnConditionCheckFailure: g.onFailure()}
		default:
			x, ok := g.build(g.chance(0.5), nil)
			if !ok {
				return nil, false
			}
			ti.Delete = &types.Delete{TableName: aws.String(t.name), Key: key, ConditionExpression: x.cond,
				ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values, ReturnValuesOnConditionCheckFailure: g.onFailure()}
		}
		in.TransactItems = append(in.TransactItems, ti)
	}
	return in, true
}

var genTables = []genTable{{"gen-simple", "pk", ""}, {"gen-composite", "pk", "sk"}}

// The generator's requests on the model: no panic, and the same seed gives
// the same replies and the same tables.
func TestGeneratedRequests(t *testing.T) {
	run := func() ([]Call, *Server) {
		srv := New()
		for _, gt := range genTables {
			mustCreate(t, srv, gt.name, gt.pk, gt.sk)
		}
		var calls []Call
		srv.SetRecorder(func(c Call) { calls = append(calls, c) })
		g := newGenerator(1, genTables)
		for range 3000 {
			op, in := g.request()
			Send(context.Background(), srv, op, in)
		}
		return calls, srv
	}
	a, srvA := run()
	b, srvB := run()
	if len(a) != len(b) {
		t.Fatalf("%d and %d calls", len(a), len(b))
	}
	failed := 0
	for i := range a {
		if !Equivalent(a[i], b[i]) {
			t.Errorf("call %d: %s and %s", i, normalize(a[i]), normalize(b[i]))
		}
		if a[i].Err != nil {
			failed++
		}
	}
	for _, gt := range genTables {
		if x, y := srvA.Items(gt.name), srvB.Items(gt.name); !slices.EqualFunc(x, y, func(p, q map[string]types.AttributeValue) bool { return render(p) == render(q) }) {
			t.Errorf("table %s differs between two runs", gt.name)
		}
	}
	t.Logf("%d requests, %d refused or failed", len(a), failed)
}
