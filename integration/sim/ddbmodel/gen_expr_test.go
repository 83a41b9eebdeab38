package ddbmodel

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The generator's expressions.

func (g *generator) cond(depth int) expression.ConditionBuilder {
	if depth > 0 && g.chance(0.4) {
		switch g.pick(3) {
		case 0:
			return expression.And(g.cond(depth-1), g.cond(depth-1))
		case 1:
			return expression.Or(g.cond(depth-1), g.cond(depth-1))
		}
		return expression.Not(g.cond(depth - 1))
	}
	name := g.name()
	val := func() expression.ValueBuilder { return expression.Value(g.value()) }
	switch g.pick(10) {
	case 0, 1:
		return compare(g.pick(6), name, expression.Value(g.scalar()))
	case 2:
		return compare(g.pick(6), name, val())
	case 3:
		return compare(g.pick(6), name, g.name()) // sometimes itself: refused
	case 4:
		lo, hi := g.scalar(), g.scalar()
		if c, ok := compareScalars(mustIngest(lo), mustIngest(hi)); ok && c > 0 && g.chance(0.8) {
			lo, hi = hi, lo
		}
		return name.Between(expression.Value(lo), expression.Value(hi))
	case 5:
		return name.In(val(), val(), val())
	case 6:
		if g.chance(0.5) {
			return name.AttributeExists()
		}
		return name.AttributeNotExists()
	case 7:
		types := []expression.DynamoDBAttributeType{expression.String, expression.Number, expression.Binary, expression.Boolean, expression.Null, expression.List, expression.Map, expression.StringSet, expression.NumberSet}
		return name.AttributeType(types[g.pick(len(types))])
	case 8:
		if g.chance(0.5) {
			return name.BeginsWith(genStrings[g.pick(len(genStrings))])
		}
		return name.Contains(g.value())
	}
	return compare(g.pick(6), name.Size(), expression.Value(n(fmt.Sprint(g.pick(4)))))
}

func compare(op int, l, r expression.OperandBuilder) expression.ConditionBuilder {
	return [...]func(l, r expression.OperandBuilder) expression.ConditionBuilder{
		expression.Equal, expression.NotEqual, expression.LessThan, expression.LessThanEqual, expression.GreaterThan, expression.GreaterThanEqual,
	}[op](l, r)
}

func mustIngest(v types.AttributeValue) types.AttributeValue {
	c, msg := ingest(v)
	if msg != "" {
		panic(msg)
	}
	return c
}

// update is 1-3 actions, on distinct attributes but now and then on the
// same one (refused) or on a key attribute (refused).
func (g *generator) update(t genTable) expression.UpdateBuilder {
	var u expression.UpdateBuilder
	used := map[string]bool{}
	for range 1 + g.pick(3) {
		attr := genNames[g.pick(len(genNames))]
		if used[attr] && g.chance(0.9) {
			continue
		}
		used[attr] = true
		if g.chance(0.02) {
			attr = t.pk
		}
		name := expression.Name(attr)
		switch g.pick(9) {
		case 0, 1:
			u = u.Set(name, expression.Value(g.value()))
		case 2:
			if g.chance(0.5) {
				u = u.Set(name, g.name().Plus(expression.Value(g.scalar())))
			} else {
				u = u.Set(name, name.Minus(expression.Value(n(genNumbers[g.pick(len(genNumbers))]))))
			}
		case 3:
			u = u.Set(name, name.IfNotExists(expression.Value(g.value())))
		case 4:
			list := &types.AttributeValueMemberL{Value: []types.AttributeValue{g.value()}}
			u = u.Set(expression.Name("l"), expression.ListAppend(expression.Name("l").IfNotExists(expression.Value(&types.AttributeValueMemberL{Value: []types.AttributeValue{}})), expression.Value(list)))
		case 5:
			if g.chance(0.8) {
				u = u.Add(name, expression.Value(n(genNumbers[g.pick(len(genNumbers))])))
			} else {
				u = u.Add(name, expression.Value(g.value())) // sets, or refused
			}
		case 6:
			u = u.Delete(name, expression.Value(g.set()))
		case 7:
			u = u.Set(g.name(), expression.Value(g.value()))
		default:
			u = u.Remove(name)
		}
	}
	return u
}
