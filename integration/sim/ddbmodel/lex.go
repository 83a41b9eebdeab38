package ddbmodel

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// The tokens of condition and update expressions.

type tokKind int

const (
	tEOF    tokKind = iota
	tIdent          // attribute name, keyword or function name
	tName           // #name placeholder
	tValue          // :value placeholder
	tNumber         // list index
	tPunct          // ( ) [ ] , . = <> < <= > >= + -
	tBad            // a character no token starts with
)

type token struct {
	kind tokKind
	text string
	pos  int // byte offset in the expression
}

// is reports whether t is the punctuation or keyword s (keywords are
// case-insensitive, as in DynamoDB).
func (t token) is(s string) bool {
	switch t.kind {
	case tPunct:
		return t.text == s
	case tIdent:
		return strings.EqualFold(t.text, s)
	}
	return false
}

func (t token) String() string {
	if t.kind == tEOF {
		return "<EOF>"
	}
	return t.text
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// lex splits an expression into tokens, ending with tEOF.
func lex(s string) []token {
	var toks []token
	i := 0
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
			i++
		}
		if i == len(s) {
			return append(toks, token{kind: tEOF, pos: i})
		}
		start, c := i, s[i]
		kind := tBad
		switch {
		case (c == '#' || c == ':') && i+1 < len(s) && isWordByte(s[i+1]):
			kind, i = tName, i+1
			if c == ':' {
				kind = tValue
			}
			for i < len(s) && isWordByte(s[i]) {
				i++
			}
		case c >= '0' && c <= '9':
			kind = tNumber
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
			}
		case isWordByte(c):
			kind = tIdent
			for i < len(s) && isWordByte(s[i]) {
				i++
			}
		case strings.HasPrefix(s[i:], "<>") || strings.HasPrefix(s[i:], "<=") || strings.HasPrefix(s[i:], ">="):
			kind, i = tPunct, i+2
		case strings.IndexByte("()[],.=<>+-", c) >= 0:
			kind, i = tPunct, i+1
		default:
			_, n := utf8.DecodeRuneInString(s[i:])
			i += n
		}
		toks = append(toks, token{kind: kind, text: s[start:i], pos: start})
	}
}

// parser is the state shared by the condition and update parsers.
type parser struct {
	src  string
	toks []token
	i    int
	// refs are the placeholders used, in order of first appearance.
	refs []string
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

// accept consumes the next token if it is s.
func (p *parser) accept(s string) bool {
	if p.peek().is(s) {
		p.i++
		return true
	}
	return false
}

// expect consumes s or fails with a syntax error at the next token.
func (p *parser) expect(s string) {
	if !p.accept(s) {
		p.syntaxError()
	}
}

// exprError is a validation error found in an expression: its message
// without the "Invalid ConditionExpression: " prefix.
type exprError struct{ msg string }

func (p *parser) fail(format string, args ...any) {
	panic(exprError{fmt.Sprintf(format, args...)})
}

// syntaxError reports the next token as DynamoDB does: the token, and the
// text from the token before it to the token after it.
func (p *parser) syntaxError() {
	bad := p.toks[p.i]
	from := bad.pos
	if p.i > 0 {
		from = p.toks[p.i-1].pos
	}
	to := len(p.src)
	if bad.kind != tEOF {
		after := p.toks[p.i+1]
		to = bad.pos + len(bad.text)
		if after.kind != tEOF {
			to = after.pos + len(after.text)
		}
	}
	p.fail("Syntax error; token: %q, near: %q", bad.String(), p.src[from:to])
}

// ref records the use of a placeholder and returns its index in refs.
func (p *parser) ref(name string) int {
	for i, r := range p.refs {
		if r == name {
			return i
		}
	}
	p.refs = append(p.refs, name)
	return len(p.refs) - 1
}

// parse runs fn, turning the panic of a validation error into an error.
func parse(src string, fn func(p *parser)) (p *parser, err *exprError) {
	p = &parser{src: src, toks: lex(src)}
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(exprError)
			if !ok {
				panic(r)
			}
			err = &e
		}
	}()
	if p.peek().kind == tEOF {
		p.fail("The expression can not be empty;")
	}
	fn(p)
	if p.peek().kind != tEOF {
		p.syntaxError()
	}
	return p, nil
}
