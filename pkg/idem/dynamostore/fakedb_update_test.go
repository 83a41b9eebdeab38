package dynamostore

import (
	"math"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// fakeDB's update expressions. Every operand reads the item as it was
// before the update, as in DynamoDB.
//
//	update = clause { clause }            (each clause at most once)
//	clause = SET set { "," set } | REMOVE #name { "," #name }
//	       | ADD #name :value { "," #name :value }
//	set    = #name "=" ( operand | if_not_exists "(" #name "," operand ")" )
//
// DELETE, "+" and "-", list_append and ADD to a set are not modelled.

// updateAction is one action of an update: its clause, the attribute it writes,
// and (SET, ADD) the value it reads from the old item.
type updateAction struct {
	clause string
	name   string
	value  func(old dbItem) (types.AttributeValue, error)
}

func (p *parser) update(expr string) ([]updateAction, error) {
	if err := p.start(expr); err != nil {
		return nil, err
	}
	var acts []updateAction
	seen := map[string]bool{}
	for p.peek() != "" {
		clause := strings.ToUpper(p.next())
		if clause != "SET" && clause != "REMOVE" && clause != "ADD" {
			return nil, notModelled("update clause %q", clause)
		}
		if seen[clause] {
			return nil, refused(`Invalid UpdateExpression: The "` + clause + `" section can only be used once in an update expression;`)
		}
		seen[clause] = true
		for {
			a, err := p.action(clause)
			if err != nil {
				return nil, err
			}
			acts = append(acts, a)
			if !p.accept(",") {
				break
			}
		}
	}
	if len(acts) == 0 {
		return nil, notModelled("empty update expression %q", expr)
	}
	return acts, nil
}

func (p *parser) action(clause string) (updateAction, error) {
	n, err := p.path()
	if err != nil {
		return updateAction{}, err
	}
	a := updateAction{clause: clause, name: n}
	switch clause {
	case "ADD":
		v, err := p.value()
		a.value = func(dbItem) (types.AttributeValue, error) { return v, nil }
		return a, err
	case "SET":
		if err := p.expect("="); err != nil {
			return updateAction{}, err
		}
		a.value, err = p.setValue()
		if err == nil && (p.peek() == "+" || p.peek() == "-") {
			err = notModelled("%q in a SET", p.peek())
		}
		return a, err
	}
	return a, nil // REMOVE
}

// setValue reads the right-hand side of a SET.
func (p *parser) setValue() (func(dbItem) (types.AttributeValue, error), error) {
	if p.accept("if_not_exists") {
		if err := p.expect("("); err != nil {
			return nil, err
		}
		n, err := p.path()
		if err != nil {
			return nil, err
		}
		if err := p.expect(","); err != nil {
			return nil, err
		}
		def, err := p.operand()
		if err != nil {
			return nil, err
		}
		return func(old dbItem) (types.AttributeValue, error) {
			if v, ok := old[n]; ok {
				return v, nil
			}
			return present(def(old))
		}, p.expect(")")
	}
	v, err := p.operand()
	return func(old dbItem) (types.AttributeValue, error) { return present(v(old)) }, err
}

// present is an operand's value, which must be there.
func present(v types.AttributeValue, ok bool) (types.AttributeValue, error) {
	if !ok {
		return nil, refused("The provided expression refers to an attribute that does not exist in the item")
	}
	return v, nil
}

// applyUpdate returns the item acts make of old (nil: none; the new item then
// starts from its key).
func applyUpdate(acts []updateAction, old, key dbItem) (dbItem, error) {
	next := cloneItem(old)
	if old == nil {
		next = cloneItem(key)
	}
	for _, a := range acts {
		if a.clause == "REMOVE" {
			delete(next, a.name)
			continue
		}
		v, err := a.value(old)
		if err != nil {
			return nil, err
		}
		if a.clause == "ADD" {
			if v, err = addNumber(old[a.name], v); err != nil {
				return nil, err
			}
		}
		next[a.name] = cloneValue(v)
	}
	return next, nil
}

// addNumber is ADD on a number: the sum, or v alone on a missing attribute.
func addNumber(cur, v types.AttributeValue) (types.AttributeValue, error) {
	n, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		return nil, notModelled("ADD of a %T (only numbers are modelled)", v)
	}
	if cur == nil {
		return n, nil
	}
	c, ok := cur.(*types.AttributeValueMemberN)
	if !ok {
		return nil, refused("An operand in the update expression has an incorrect data type")
	}
	x, y := mustInt(c.Value), mustInt(n.Value)
	if (y > 0 && x > math.MaxInt64-y) || (y < 0 && x < math.MinInt64-y) {
		return nil, notModelled("ADD beyond int64: %d + %d", x, y)
	}
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(x+y, 10)}, nil
}
