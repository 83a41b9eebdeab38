package ddbmodel

import (
	"bytes"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Errors DynamoDB raises while applying an update to the item.
const (
	msgNoAttribute = "The provided expression refers to an attribute that does not exist in the item"
	msgBadOperand  = "An operand in the update expression has an incorrect data type"
	msgInvalidPath = "The document path provided in the update expression is invalid for update"
)

// apply returns the item u makes of old, or DynamoDB's message. Every
// operand reads old (so "SET a = b, b = a" swaps); the SETs, ADDs and
// DELETEs are applied, then the REMOVEs, later list indexes first, so every
// index names an element of the old list. The new item holds copies of the
// request's values. old is not changed unless fresh (it is then the
// request's own: the key of an absent item), when it becomes the new item;
// reading it while it changes is safe, as no two actions touch one path.
func (c *exprCtx) apply(u *updateExpr, old item, fresh bool) (item, string) {
	vals := make([]av, len(u.set))
	for i, a := range u.set {
		v, msg := c.setValue(a, old)
		if msg != "" {
			return nil, msg
		}
		vals[i] = v
	}
	next := old
	if !fresh {
		next = make(item, len(old)+len(u.set)+len(u.add))
		for k, v := range old {
			next[k] = v
		}
	}
	for i, a := range u.set {
		if !c.set(next, a.path, vals[i]) {
			return nil, msgInvalidPath
		}
	}
	for _, a := range u.add {
		cur, found := c.get(old, a.path)
		v := clone(c.slots[a.ref].value)
		if found {
			var msg string
			if v, msg = add(cur, v); msg != "" {
				return nil, msg
			}
		}
		if !c.set(next, a.path, v) {
			return nil, msgInvalidPath
		}
	}
	for _, a := range u.del {
		cur, found := c.get(old, a.path)
		if !found {
			continue
		}
		rest, ok := subtract(cur, c.slots[a.ref].value) // keeps members of cur only
		switch {
		case !ok:
			return nil, msgBadOperand
		case rest == nil && !c.remove(next, a.path), rest != nil && !c.set(next, a.path, rest):
			return nil, msgInvalidPath
		}
	}
	remove := u.remove
	if u.removeIndex && len(remove) > 1 {
		remove = slices.Clone(remove)
		slices.SortStableFunc(remove, c.removeOrder)
	}
	for _, p := range remove {
		if !c.remove(next, p) {
			return nil, msgInvalidPath
		}
	}
	return next, ""
}

// setValue evaluates the right-hand side of a SET action on it.
func (c *exprCtx) setValue(a setAction, it item) (av, string) {
	l, msg := c.setOperand(a.l, it)
	if msg != "" || a.op == "" {
		return l, msg
	}
	r, msg := c.setOperand(a.r, it)
	if msg != "" {
		return nil, msg
	}
	x, okL := l.(*types.AttributeValueMemberN)
	y, okR := r.(*types.AttributeValueMemberN)
	if !okL || !okR {
		return nil, msgBadOperand
	}
	sum, msg := addNumbers(x.Value, y.Value, a.op == "-")
	if msg != "" {
		return nil, msg
	}
	return &types.AttributeValueMemberN{Value: sum}, ""
}

func (c *exprCtx) setOperand(o *operand, it item) (av, string) {
	switch o.kind {
	case opPath:
		v, ok := c.get(it, o.path)
		if !ok {
			return nil, msgNoAttribute
		}
		return v, ""
	case opValue:
		return clone(c.slots[o.ref].value), "" // the request's: a copy to hold
	case opIfNotExists:
		if v, ok := c.get(it, o.path); ok {
			return v, ""
		}
		return c.setOperand(o.args[0], it)
	case opListAppend:
		a, msg := c.setOperand(o.args[0], it)
		if msg != "" {
			return nil, msg
		}
		b, msg := c.setOperand(o.args[1], it)
		if msg != "" {
			return nil, msg
		}
		x, okA := a.(*types.AttributeValueMemberL)
		y, okB := b.(*types.AttributeValueMemberL)
		if !okA || !okB {
			return nil, msgBadOperand
		}
		return &types.AttributeValueMemberL{Value: slices.Concat(x.Value, y.Value)}, ""
	}
	panic("ddbmodel: operand not allowed in an update")
}

// add is ADD of v to the attribute's value cur: a sum of numbers, a union
// of sets of one type.
func add(cur, v av) (av, string) {
	switch cur := cur.(type) {
	case *types.AttributeValueMemberN:
		if n, ok := v.(*types.AttributeValueMemberN); ok {
			sum, msg := addNumbers(cur.Value, n.Value, false)
			if msg != "" {
				return nil, msg
			}
			return &types.AttributeValueMemberN{Value: sum}, ""
		}
	case *types.AttributeValueMemberSS:
		if s, ok := v.(*types.AttributeValueMemberSS); ok {
			u := slices.Concat(cur.Value, s.Value)
			slices.Sort(u)
			return &types.AttributeValueMemberSS{Value: slices.Compact(u)}, ""
		}
	case *types.AttributeValueMemberNS:
		if s, ok := v.(*types.AttributeValueMemberNS); ok {
			u := slices.Concat(cur.Value, s.Value)
			slices.SortFunc(u, compareNumbers)
			return &types.AttributeValueMemberNS{Value: slices.Compact(u)}, ""
		}
	case *types.AttributeValueMemberBS:
		if s, ok := v.(*types.AttributeValueMemberBS); ok {
			u := slices.Concat(cur.Value, s.Value)
			slices.SortFunc(u, bytes.Compare)
			return &types.AttributeValueMemberBS{Value: slices.CompactFunc(u, bytes.Equal)}, ""
		}
	}
	return nil, msgBadOperand
}

// subtract is DELETE of the members of v from the set cur; nil when none
// is left (the attribute goes). ok is false for sets of different types or
// a cur that is no set.
func subtract(cur, v av) (rest av, ok bool) {
	switch cur := cur.(type) {
	case *types.AttributeValueMemberSS:
		if s, ok := v.(*types.AttributeValueMemberSS); ok {
			left := slices.DeleteFunc(slices.Clone(cur.Value), func(m string) bool { return slices.Contains(s.Value, m) })
			if len(left) == 0 {
				return nil, true
			}
			return &types.AttributeValueMemberSS{Value: left}, true
		}
	case *types.AttributeValueMemberNS:
		if s, ok := v.(*types.AttributeValueMemberNS); ok {
			left := slices.DeleteFunc(slices.Clone(cur.Value), func(m string) bool { return slices.Contains(s.Value, m) })
			if len(left) == 0 {
				return nil, true
			}
			return &types.AttributeValueMemberNS{Value: left}, true
		}
	case *types.AttributeValueMemberBS:
		if s, ok := v.(*types.AttributeValueMemberBS); ok {
			left := slices.DeleteFunc(slices.Clone(cur.Value), func(m []byte) bool {
				return slices.ContainsFunc(s.Value, func(x []byte) bool { return bytes.Equal(m, x) })
			})
			if len(left) == 0 {
				return nil, true
			}
			return &types.AttributeValueMemberBS{Value: left}, true
		}
	}
	return nil, false
}

// updated returns the top-level attributes of it that hold one of paths,
// as ReturnValues UPDATED_OLD and UPDATED_NEW do in DynamoDB Local (which
// returns whole attributes, not just the paths); nil for none.
func (c *exprCtx) updated(paths []docPath, it item) item {
	var out item
	for _, p := range paths {
		if _, ok := c.get(it, p); ok {
			if out == nil {
				out = item{}
			}
			name := c.elemName(p[0])
			out[name] = it[name]
		}
	}
	return out
}
