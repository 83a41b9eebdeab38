package ddbmodel

import (
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The checks DynamoDB makes of an expression once its placeholders are
// known, before it reads the item: operand types of the values, a path
// compared with itself, overlapping update paths.

// validTypes is attribute_type's list, in DynamoDB's order.
const validTypes = "{N,BS,L,B,NULL,M,S,SS,NS,BOOL}"

func operandTypeError(fn string, v av) *exprError {
	return &exprError{fmt.Sprintf("Incorrect operand type for operator or function; operator or function: %s, operand type: %s", fn, typeName(v))}
}

// valueOf returns the value of a :value operand.
func (c *exprCtx) valueOf(o *operand) (av, bool) {
	if o.kind != opValue {
		return nil, false
	}
	return c.slots[o.ref].value, true
}

// requireScalar refuses a :value operand of fn that is not S, N or B.
func (c *exprCtx) requireScalar(fn string, ops ...*operand) *exprError {
	for _, o := range ops {
		if v, ok := c.valueOf(o); ok && !isScalar(v) {
			return operandTypeError(fn, v)
		}
	}
	return nil
}

// distinct refuses a first operand that is the same path as another one.
func (c *exprCtx) distinct(fn string, first *operand, others ...*operand) *exprError {
	if first.kind != opPath {
		return nil
	}
	for _, o := range others {
		if o.kind == opPath && c.samePath(first.path, o.path) {
			return &exprError{fmt.Sprintf("The first operand must be distinct from the remaining operands for this operator or function; operator: %s, first operand: %s", fn, c.render(first.path))}
		}
	}
	return nil
}

func (c *exprCtx) samePath(a, b docPath) bool {
	return len(a) == len(b) && c.relate(a, b) == overlapping
}

func (c *exprCtx) validateCond(n cond) *exprError {
	switch n := n.(type) {
	case condAnd:
		if err := c.validateCond(n.l); err != nil {
			return err
		}
		return c.validateCond(n.r)
	case condOr:
		if err := c.validateCond(n.l); err != nil {
			return err
		}
		return c.validateCond(n.r)
	case condNot:
		return c.validateCond(n.c)
	case condCompare:
		if err := c.distinct(n.op, n.l, n.r); err != nil {
			return err
		}
		if n.op != "=" && n.op != "<>" {
			return c.requireScalar(n.op, n.l, n.r)
		}
	case condBetween:
		return c.validateBetween(n)
	case condIn:
		return c.distinct("IN", n.v, n.list...)
	case condFunc:
		return c.validateFunc(n)
	}
	return nil
}

func (c *exprCtx) validateBetween(n condBetween) *exprError {
	if err := c.distinct("BETWEEN", n.v, n.lo, n.hi); err != nil {
		return err
	}
	if err := c.requireScalar("BETWEEN", n.v, n.lo, n.hi); err != nil {
		return err
	}
	lo, okLo := c.valueOf(n.lo)
	hi, okHi := c.valueOf(n.hi)
	if !okLo || !okHi {
		return nil
	}
	// The message shows the values as the request wrote them.
	bounds := fmt.Sprintf("lower bound operand: AttributeValue: %s, upper bound operand: AttributeValue: %s", describe(c.raw[c.refs[n.lo.ref]]), describe(c.raw[c.refs[n.hi.ref]]))
	cmp, same := compareScalars(lo, hi)
	switch {
	case !same:
		return &exprError{"The BETWEEN operator requires same data type for lower and upper bounds; " + bounds}
	case cmp > 0:
		return &exprError{"The BETWEEN operator requires upper bound to be greater than or equal to lower bound; " + bounds}
	}
	return nil
}

func (c *exprCtx) validateFunc(n condFunc) *exprError {
	switch n.fn {
	case "begins_with":
		if err := c.distinct(n.fn, n.args[0], n.args[1]); err != nil {
			return err
		}
		for _, o := range n.args {
			if v, ok := c.valueOf(o); ok && typeName(v) != "S" && typeName(v) != "B" {
				return operandTypeError(n.fn, v)
			}
		}
	case "contains":
		return c.distinct(n.fn, n.args[0], n.args[1])
	case "attribute_type":
		v, ok := c.valueOf(n.args[1])
		if !ok {
			return nil
		}
		s, isS := v.(*types.AttributeValueMemberS)
		if !isS {
			return operandTypeError(n.fn, v)
		}
		if longTypeNames[s.Value] == "" {
			return &exprError{fmt.Sprintf("Invalid attribute type name found; type: %s, valid types: %s", s.Value, validTypes)}
		}
	}
	return nil
}

// condPaths appends the document paths of a condition to paths.
func condPaths(n cond, paths []docPath) []docPath {
	switch n := n.(type) {
	case condAnd:
		return condPaths(n.r, condPaths(n.l, paths))
	case condOr:
		return condPaths(n.r, condPaths(n.l, paths))
	case condNot:
		return condPaths(n.c, paths)
	case condCompare:
		return operandPaths(paths, n.l, n.r)
	case condBetween:
		return operandPaths(paths, n.v, n.lo, n.hi)
	case condIn:
		return operandPaths(append(paths, operandPaths(nil, n.v)...), n.list...)
	case condFunc:
		return operandPaths(paths, n.args...)
	}
	return paths
}

func operandPaths(paths []docPath, ops ...*operand) []docPath {
	for _, o := range ops {
		if o.kind == opPath || o.kind == opIfNotExists {
			paths = append(paths, o.path)
		}
		paths = operandPaths(paths, o.args...)
	}
	return paths
}

func (c *exprCtx) validateUpdate(u *updateExpr) *exprError {
	// Overlapping paths first: DynamoDB Local reports them before the
	// operands' types.
	for i, a := range u.paths {
		for _, b := range u.paths[i+1:] {
			if c.elemName(a[0]) != c.elemName(b[0]) {
				continue // the common case, decided cheaply
			}
			switch c.relate(a, b) {
			case overlapping:
				return &exprError{fmt.Sprintf("Two document paths overlap with each other; must remove or rewrite one of these paths; path one: %s, path two: %s", c.render(a), c.render(b))}
			case conflicting:
				return &exprError{fmt.Sprintf("Two document paths conflict with each other; must remove or rewrite one of these paths; path one: %s, path two: %s", c.render(a), c.render(b))}
			}
		}
	}
	for _, a := range u.set {
		if a.op != "" {
			for _, o := range []*operand{a.l, a.r} {
				if v, ok := c.valueOf(o); ok && typeName(v) != "N" {
					return operandTypeError(a.op, v)
				}
			}
		}
		if err := c.validateSetOperand(a.l); err != nil {
			return err
		}
		if a.r != nil {
			if err := c.validateSetOperand(a.r); err != nil {
				return err
			}
		}
	}
	for _, a := range u.add {
		switch v := c.slots[a.ref].value; typeName(v) {
		case "N", "SS", "NS", "BS":
		default:
			return &exprError{fmt.Sprintf("Incorrect operand type for operator or function; operator: ADD, operand type: %s, typeSet: ALLOWED_FOR_ADD_OPERAND", longTypeNames[typeName(v)])}
		}
	}
	for _, a := range u.del {
		switch v := c.slots[a.ref].value; typeName(v) {
		case "SS", "NS", "BS":
		default:
			return &exprError{fmt.Sprintf("Incorrect operand type for operator or function; operator: DELETE, operand type: %s, typeSet: ALLOWED_FOR_DELETE_OPERAND", longTypeNames[typeName(v)])}
		}
	}
	return nil
}

// validateSetOperand refuses a list_append of a :value that is not a list.
func (c *exprCtx) validateSetOperand(o *operand) *exprError {
	for _, arg := range o.args {
		if o.kind == opListAppend {
			if v, ok := c.valueOf(arg); ok && typeName(v) != "L" {
				return operandTypeError("list_append", v)
			}
		}
		if err := c.validateSetOperand(arg); err != nil {
			return err
		}
	}
	return nil
}

// checkKeyPaths refuses a nested path into a key attribute, once the
// table's key is known: it returns DynamoDB's message.
func (x *exprs) checkKeyPaths(keys []string) string {
	if x.upd != nil {
		if msg := x.updCtx.nestedKey(x.upd.paths, keys); msg != "" {
			return msg
		}
	}
	if x.cond != nil {
		return x.condCtx.nestedKey(x.cond.paths, keys)
	}
	return ""
}

// keyUpdate refuses an update of a key attribute. DynamoDB Local checks it
// once the condition has passed.
func (c *exprCtx) keyUpdate(u *updateExpr, keys []string) string {
	for _, p := range u.paths {
		if name := c.elemName(p[0]); len(p) == 1 && slices.Contains(keys, name) {
			return "One or more parameter values were invalid: Cannot update attribute " + name + ". This attribute is part of the key"
		}
	}
	return ""
}

// nestedKey refuses a path into a key attribute.
func (c *exprCtx) nestedKey(paths []docPath, keys []string) string {
	for _, p := range paths {
		if name := c.elemName(p[0]); len(p) > 1 && slices.Contains(keys, name) {
			return "Key attributes must be scalars; list random access '[]' and map lookup '.' are not allowed: Key: " + name
		}
	}
	return ""
}
