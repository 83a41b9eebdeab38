package dynamostore

import (
	"bytes"
	"cmp"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// fakeDB's condition expressions, with DynamoDB's semantics: a missing
// attribute or operands of different types make a comparison false ("<>"
// is the negation of "=", so it is true of them); numbers compare
// numerically, strings and binaries bytewise.
//
//	or      = and { OR and }
//	and     = not { AND not }
//	not     = NOT not | primary
//	primary = "(" or ")" | attribute_exists "(" #name ")"
//	        | attribute_not_exists "(" #name ")" | operand comparator operand
//
// (NOT binds tighter than AND, AND than OR, as in DynamoDB.) BETWEEN, IN
// and the other functions are not modelled.

// dbCond is a parsed condition: whether it holds of an item (nil: none).
type dbCond func(dbItem) bool

func (p *parser) condition(expr string) (dbCond, error) {
	if err := p.start(expr); err != nil {
		return nil, err
	}
	c, err := p.or()
	if err != nil {
		return nil, err
	}
	return c, p.end()
}

func (p *parser) or() (dbCond, error) {
	l, err := p.and()
	for err == nil && p.accept("OR") {
		var r dbCond
		if r, err = p.and(); err == nil {
			a := l
			l = func(it dbItem) bool { return a(it) || r(it) }
		}
	}
	return l, err
}

func (p *parser) and() (dbCond, error) {
	l, err := p.not()
	for err == nil && p.accept("AND") {
		var r dbCond
		if r, err = p.not(); err == nil {
			a := l
			l = func(it dbItem) bool { return a(it) && r(it) }
		}
	}
	return l, err
}

func (p *parser) not() (dbCond, error) {
	if !p.accept("NOT") {
		return p.primary()
	}
	c, err := p.not()
	return func(it dbItem) bool { return !c(it) }, err
}

func (p *parser) primary() (dbCond, error) {
	switch fn := p.peek(); fn {
	case "(":
		p.next()
		c, err := p.or()
		if err != nil {
			return nil, err
		}
		return c, p.expect(")")
	case "attribute_exists", "attribute_not_exists":
		p.next()
		if err := p.expect("("); err != nil {
			return nil, err
		}
		n, err := p.path()
		if err != nil {
			return nil, err
		}
		want := fn == "attribute_exists"
		return func(it dbItem) bool { _, ok := it[n]; return ok == want }, p.expect(")")
	}
	l, err := p.operand()
	if err != nil {
		return nil, err
	}
	op := p.next()
	if !strings.Contains(" = <> < <= > >= ", " "+op+" ") {
		return nil, notModelled("comparator %q (BETWEEN, IN and functions other than attribute_exists and attribute_not_exists are not modelled)", op)
	}
	r, err := p.operand()
	if err != nil {
		return nil, err
	}
	return func(it dbItem) bool {
		a, okA := l(it)
		b, okB := r(it)
		if op == "=" || op == "<>" {
			return (okA && okB && equalValues(a, b)) == (op == "=")
		}
		c, ok := compareValues(a, b)
		return okA && okB && ok && ordered(op, c)
	}, nil
}

func ordered(op string, c int) bool {
	switch op {
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	}
	return c >= 0 // ">="
}

// compareValues orders two values of the same scalar type; ok is false for
// values of different types (or nil). Numbers are int64 (fakeDB refuses
// others on the way in, see checkValue).
func compareValues(a, b types.AttributeValue) (c int, ok bool) {
	switch a := a.(type) {
	case *types.AttributeValueMemberS:
		if b, ok := b.(*types.AttributeValueMemberS); ok {
			return strings.Compare(a.Value, b.Value), true
		}
	case *types.AttributeValueMemberB:
		if b, ok := b.(*types.AttributeValueMemberB); ok {
			return bytes.Compare(a.Value, b.Value), true
		}
	case *types.AttributeValueMemberN:
		if b, ok := b.(*types.AttributeValueMemberN); ok {
			return cmp.Compare(mustInt(a.Value), mustInt(b.Value)), true
		}
	}
	return 0, false
}

func equalValues(a, b types.AttributeValue) bool {
	if a, ok := a.(*types.AttributeValueMemberBOOL); ok {
		b, ok := b.(*types.AttributeValueMemberBOOL)
		return ok && a.Value == b.Value
	}
	c, ok := compareValues(a, b)
	return ok && c == 0
}

// mustInt reads a number fakeDB accepted (checkValue): an int64.
func mustInt(n string) int64 {
	i, err := strconv.ParseInt(n, 10, 64)
	if err != nil {
		panic("fakedb: a number that was not checked: " + n)
	}
	return i
}
