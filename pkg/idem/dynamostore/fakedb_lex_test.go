package dynamostore

import (
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// The words of fakeDB's expressions, and its two kinds of refusal.
//
// fakeDB (fakedb_test.go) evaluates the expressions the Store sends, so
// that a unit test sees what a wrong condition does. It understands the
// part of DynamoDB's grammar this Store and the tests' ledger use; anything
// else is notModelled, which fails the test that sent it rather than being
// answered with something made up.

// notModelledError is a request fakeDB does not understand. It is not a
// DynamoDB error: the test that sent it fails (see fakeDB.fail).
type notModelledError struct{ what string }

func (e *notModelledError) Error() string { return "fakedb: not modelled: " + e.what }

func notModelled(format string, args ...any) error {
	return &notModelledError{what: fmt.Sprintf(format, args...)}
}

// refused is DynamoDB's answer to a request it will not run, as the SDK
// returns it.
func refused(msg string) error {
	return &smithy.GenericAPIError{Code: "ValidationException", Message: msg}
}

// lex splits an expression into tokens: #name and :value placeholders,
// words (keywords, function names), and the operators and punctuation the
// grammar uses. Dotted paths, list indexes and anything else are not
// modelled.
func lex(s string) ([]string, error) {
	var toks []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#' || c == ':' || isWordByte(c):
			j := i + 1
			for j < len(s) && isWordByte(s[j]) {
				j++
			}
			if j == i+1 && !isWordByte(c) {
				return nil, notModelled("%q alone in %q", c, s)
			}
			toks = append(toks, s[i:j])
			i = j
		case strings.HasPrefix(s[i:], "<=") || strings.HasPrefix(s[i:], ">=") || strings.HasPrefix(s[i:], "<>"):
			toks = append(toks, s[i:i+2])
			i += 2
		case strings.IndexByte("()=<>,+-", c) >= 0:
			toks = append(toks, s[i:i+1])
			i++
		default:
			return nil, notModelled("character %q in %q", c, s)
		}
	}
	return toks, nil
}

func isWordByte(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// parser reads the tokens of one request's expressions, resolving its
// placeholders and remembering which it used (DynamoDB refuses a request
// with unused ones).
type parser struct {
	toks   []string
	pos    int
	names  map[string]string
	values map[string]types.AttributeValue
	used   map[string]bool
}

func (p *parser) start(expr string) error {
	toks, err := lex(expr)
	p.toks, p.pos = toks, 0
	return err
}

func (p *parser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return ""
}

func (p *parser) next() string {
	tok := p.peek()
	p.pos++
	return tok
}

// accept consumes tok (keywords are case-insensitive) if it comes next.
func (p *parser) accept(tok string) bool {
	if strings.EqualFold(p.peek(), tok) && p.pos < len(p.toks) {
		p.pos++
		return true
	}
	return false
}

func (p *parser) expect(tok string) error {
	if !p.accept(tok) {
		return notModelled("%q where %q was expected in %q", p.peek(), tok, strings.Join(p.toks, " "))
	}
	return nil
}

// end reports tokens left over after a whole expression.
func (p *parser) end() error {
	if p.pos < len(p.toks) {
		return notModelled("%q after the end of %q", p.peek(), strings.Join(p.toks, " "))
	}
	return nil
}

// path reads an attribute: a #name placeholder (the only form the
// expression builder emits). A bare name would need DynamoDB's reserved
// words, which are not modelled.
func (p *parser) path() (string, error) {
	tok := p.next()
	if !strings.HasPrefix(tok, "#") {
		return "", notModelled("attribute %q (only #name placeholders are modelled)", tok)
	}
	n, ok := p.names[tok]
	if !ok {
		return "", refused("Invalid expression: An expression attribute name used in the document path is not defined; attribute name: " + tok)
	}
	p.used[tok] = true
	return n, nil
}

// value reads a :value placeholder.
func (p *parser) value() (types.AttributeValue, error) {
	tok := p.next()
	if !strings.HasPrefix(tok, ":") {
		return nil, notModelled("operand %q (only #name and :value are modelled)", tok)
	}
	v, ok := p.values[tok]
	if !ok {
		return nil, refused("Invalid expression: An expression attribute value used in expression is not defined; attribute value: " + tok)
	}
	p.used[tok] = true
	return v, nil
}

// operand reads a #name or a :value, as a function of the item.
func (p *parser) operand() (func(dbItem) (types.AttributeValue, bool), error) {
	if strings.HasPrefix(p.peek(), "#") {
		n, err := p.path()
		return func(it dbItem) (types.AttributeValue, bool) { v, ok := it[n]; return v, ok }, err
	}
	v, err := p.value()
	return func(dbItem) (types.AttributeValue, bool) { return v, true }, err
}

// unused is DynamoDB's refusal of names or values the expressions do not
// use, if there are any.
func (p *parser) unused() error {
	for ph := range p.names {
		if !p.used[ph] {
			return refused("Value provided in ExpressionAttributeNames unused in expressions: keys: {" + ph + "}")
		}
	}
	for ph := range p.values {
		if !p.used[ph] {
			return refused("Value provided in ExpressionAttributeValues unused in expressions: keys: {" + ph + "}")
		}
	}
	return nil
}
