package ddbmodel

import (
	"fmt"
	"slices"
)

// slot is a placeholder of an expression bound for one request: the name
// a #placeholder stands for, or the value of a :placeholder in the model's
// form.
type slot struct {
	name  string
	value av
}

// exprCtx is an expression's placeholders bound for one request, indexed
// as the expression's refs, and the values as the request wrote them (for
// messages).
type exprCtx struct {
	slots []slot
	refs  []string
	raw   map[string]av
}

// exprs are a request's expressions, validated and bound.
type exprs struct {
	cond    *condExpr
	condCtx exprCtx
	upd     *updateExpr
	updCtx  exprCtx
}

// exprInput is what a request sends of expressions. without is how
// DynamoDB names the missing expressions when names or values come alone.
type exprInput struct {
	condition, update *string
	names             map[string]string
	values            map[string]av
	without           string
}

// maxCache bounds each expression cache; the simulator sends a handful of
// texts millions of times, a random generator many texts once.
const maxCache = 4096

// parsed is a cache entry: an expression or the error its text makes.
type parsed[T any] struct {
	expr T
	err  *exprError
}

// expressions validates a request's expressions as DynamoDB does, in its
// order: the maps, each expression (syntax, placeholders, operand types),
// then unused names and values. The caller holds s.mu.
func (s *Server) expressions(in exprInput) (*exprs, error) {
	switch {
	case in.names != nil && len(in.names) == 0:
		return nil, validation("ExpressionAttributeNames must not be empty")
	case in.values != nil && len(in.values) == 0:
		return nil, validation("ExpressionAttributeValues must not be empty")
	case in.condition == nil && in.update == nil && in.names != nil:
		return nil, validation("ExpressionAttributeNames can only be specified when using expressions: " + in.without)
	case in.condition == nil && in.update == nil && in.values != nil:
		return nil, validation("ExpressionAttributeValues can only be specified when using expressions: " + in.without)
	}
	if err := checkNames(in.names); err != nil {
		return nil, err
	}
	values, err := requestValues(in.values)
	if err != nil {
		return nil, err
	}
	x := &exprs{}
	if in.update != nil {
		u := cached(s.updates, *in.update, parseUpdate)
		ctx, e := s.bind(u.err, u.expr.refsOrNil(), in.names, values, in.values)
		if e == nil {
			e = ctx.validateUpdate(u.expr)
		}
		if e != nil {
			return nil, validation("Invalid UpdateExpression: " + e.msg)
		}
		x.upd, x.updCtx = u.expr, ctx
	}
	if in.condition != nil {
		c := cached(s.conds, *in.condition, parseCondition)
		ctx, e := s.bind(c.err, c.expr.refsOrNil(), in.names, values, in.values)
		if e == nil {
			e = ctx.validateCond(c.expr.root)
		}
		if e != nil {
			return nil, validation("Invalid ConditionExpression: " + e.msg)
		}
		x.cond, x.condCtx = c.expr, ctx
	}
	// Every placeholder used is in the maps (bind checked), so a map has
	// unused keys exactly when it has more keys than were used.
	used := s.used(x)
	if len(in.names) != used.names {
		return nil, validation("Value provided in ExpressionAttributeNames unused in expressions: keys: {" + unusedKeys(in.names, x) + "}")
	}
	if len(values) != used.values {
		return nil, validation("Value provided in ExpressionAttributeValues unused in expressions: keys: {" + unusedKeys(values, x) + "}")
	}
	return x, nil
}

// checkNames refuses a badly formed name placeholder or an empty name; the
// first in key order when there are several.
func checkNames(names map[string]string) error {
	for k, v := range names {
		if isPlaceholder(k, '#') && v != "" {
			continue
		}
		for _, k := range sortedKeys(names) {
			switch {
			case !isPlaceholder(k, '#'):
				return validation(fmt.Sprintf("ExpressionAttributeNames contains invalid key: Syntax error; key: %q", k))
			case names[k] == "":
				return validation("ExpressionAttributeNames contains invalid value: Empty attribute name for key " + k)
			}
		}
	}
	return nil
}

// requestValues validates the values of a request, every one of them as
// DynamoDB does, used or not. It returns the request's own map when every
// value is already in the model's form (the common case: no copy), else a
// map of copies; apply copies what it stores.
func requestValues(values map[string]av) (map[string]av, error) {
	ok := true
	for k, v := range values {
		if !isPlaceholder(k, ':') || !canonical(v) {
			ok = false
			break
		}
	}
	if ok {
		return values, nil
	}
	out := make(map[string]av, len(values))
	for _, k := range sortedKeys(values) {
		if !isPlaceholder(k, ':') {
			return nil, validation(fmt.Sprintf("ExpressionAttributeValues contains invalid key: Syntax error; key: %q", k))
		}
		v, msg := ingest(values[k])
		if msg != "" {
			return nil, validation(fmt.Sprintf("ExpressionAttributeValues contains invalid value: %s for key %s", msg, k))
		}
		out[k] = v
	}
	return out, nil
}

// cached returns the parse of text, parsing it the first time.
func cached[T any](cache map[string]parsed[T], text string, parse func(string) (T, *exprError)) parsed[T] {
	if p, ok := cache[text]; ok {
		return p
	}
	if len(cache) >= maxCache {
		clear(cache)
	}
	e, err := parse(text)
	p := parsed[T]{e, err}
	cache[text] = p
	return p
}

func (c *condExpr) refsOrNil() []string {
	if c == nil {
		return nil
	}
	return c.refs
}

func (u *updateExpr) refsOrNil() []string {
	if u == nil {
		return nil
	}
	return u.refs
}

// isPlaceholder reports whether k is prefix followed by letters, digits or
// underscores.
func isPlaceholder(k string, prefix byte) bool {
	if len(k) < 2 || k[0] != prefix {
		return false
	}
	for i := 1; i < len(k); i++ {
		if !isWordByte(k[i]) {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
