package ddbmodel

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DynamoDB's semantics of a condition on an item (nil: no item). A missing
// attribute or operands of different types make a comparison false, never
// an error; "<>" is the negation of "=", so it is true of them.

func (c *exprCtx) eval(n cond, it item) bool {
	switch n := n.(type) {
	case condAnd:
		return c.eval(n.l, it) && c.eval(n.r, it)
	case condOr:
		return c.eval(n.l, it) || c.eval(n.r, it)
	case condNot:
		return !c.eval(n.c, it)
	case condCompare:
		l, okL := c.operand(n.l, it)
		r, okR := c.operand(n.r, it)
		if n.op == "=" || n.op == "<>" {
			return (okL && okR && equal(l, r)) == (n.op == "=")
		}
		if !okL || !okR {
			return false
		}
		cmp, ok := compareScalars(l, r)
		return ok && ordered(n.op, cmp)
	case condBetween:
		return c.between(n, it)
	case condIn:
		v, ok := c.operand(n.v, it)
		if !ok {
			return false
		}
		for _, o := range n.list {
			if w, ok := c.operand(o, it); ok && equal(v, w) {
				return true
			}
		}
		return false
	case condFunc:
		return c.function(n, it)
	}
	panic("ddbmodel: unknown condition node")
}

func ordered(op string, cmp int) bool {
	switch op {
	case "<":
		return cmp < 0
	case "<=":
		return cmp <= 0
	case ">":
		return cmp > 0
	}
	return cmp >= 0
}

func (c *exprCtx) between(n condBetween, it item) bool {
	v, ok := c.operand(n.v, it)
	lo, okLo := c.operand(n.lo, it)
	hi, okHi := c.operand(n.hi, it)
	if !ok || !okLo || !okHi {
		return false
	}
	a, ok := compareScalars(lo, v)
	b, ok2 := compareScalars(v, hi)
	return ok && ok2 && a <= 0 && b <= 0
}

func (c *exprCtx) function(n condFunc, it item) bool {
	v, found := c.operand(n.args[0], it)
	switch n.fn {
	case "attribute_exists":
		return found
	case "attribute_not_exists":
		return !found
	}
	arg, ok := c.operand(n.args[1], it)
	if !found || !ok {
		return false
	}
	switch n.fn {
	case "attribute_type":
		t, ok := arg.(*types.AttributeValueMemberS)
		return ok && typeName(v) == t.Value
	case "begins_with":
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			p, ok := arg.(*types.AttributeValueMemberS)
			return ok && strings.HasPrefix(v.Value, p.Value)
		case *types.AttributeValueMemberB:
			p, ok := arg.(*types.AttributeValueMemberB)
			return ok && bytes.HasPrefix(v.Value, p.Value)
		}
		return false
	}
	return contains(v, arg)
}

// contains: a substring of a string or binary, a member of a set of the
// same type, an element of a list.
func contains(v, arg av) bool {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		s, ok := arg.(*types.AttributeValueMemberS)
		return ok && strings.Contains(v.Value, s.Value)
	case *types.AttributeValueMemberB:
		b, ok := arg.(*types.AttributeValueMemberB)
		return ok && bytes.Contains(v.Value, b.Value)
	case *types.AttributeValueMemberSS:
		s, ok := arg.(*types.AttributeValueMemberS)
		return ok && slices.Contains(v.Value, s.Value)
	case *types.AttributeValueMemberNS:
		n, ok := arg.(*types.AttributeValueMemberN)
		return ok && slices.Contains(v.Value, n.Value)
	case *types.AttributeValueMemberBS:
		b, ok := arg.(*types.AttributeValueMemberB)
		return ok && slices.ContainsFunc(v.Value, func(m []byte) bool { return bytes.Equal(m, b.Value) })
	case *types.AttributeValueMemberL:
		return slices.ContainsFunc(v.Value, func(e av) bool { return equal(e, arg) })
	}
	return false
}

// operand evaluates an operand of a condition on it.
func (c *exprCtx) operand(o *operand, it item) (av, bool) {
	switch o.kind {
	case opPath:
		return c.get(it, o.path)
	case opValue:
		return c.slots[o.ref].value, true
	case opSize:
		v, ok := c.operand(o.args[0], it)
		if !ok {
			return nil, false
		}
		n, ok := size(v)
		if !ok {
			return nil, false
		}
		return &types.AttributeValueMemberN{Value: strconv.Itoa(n)}, true
	}
	panic("ddbmodel: operand not allowed in a condition")
}

// size is the size() function: a string's length in UTF-16 code units (as
// DynamoDB Local counts: size("héllo") is 5), a binary's bytes, the
// elements of a set, list or map. Other types have none, and a comparison
// with size() of them is false.
func size(v av) (int, bool) {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		n := 0
		for _, r := range v.Value {
			n += utf16.RuneLen(r)
		}
		return n, true
	case *types.AttributeValueMemberB:
		return len(v.Value), true
	case *types.AttributeValueMemberSS:
		return len(v.Value), true
	case *types.AttributeValueMemberNS:
		return len(v.Value), true
	case *types.AttributeValueMemberBS:
		return len(v.Value), true
	case *types.AttributeValueMemberL:
		return len(v.Value), true
	case *types.AttributeValueMemberM:
		return len(v.Value), true
	}
	return 0, false
}
