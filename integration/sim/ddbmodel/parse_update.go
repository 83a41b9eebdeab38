package ddbmodel

import (
	"slices"
	"strings"
)

// The update grammar: clauses in any order, each at most once.
//
//	update  = clause { clause }
//	clause  = SET set {"," set} | REMOVE path {"," path}
//	        | ADD path :value {"," path :value} | DELETE path :value {"," path :value}
//	set     = path "=" operand [ ("+" | "-") operand ]
//	operand = path | :value | if_not_exists(path, operand) | list_append(operand, operand)

type setAction struct {
	path docPath
	op   string // "", "+" or "-"
	l, r *operand
}

// valueAction is an ADD or a DELETE.
type valueAction struct {
	path docPath
	ref  int // of its :placeholder
}

// updateExpr is a parsed UpdateExpression.
type updateExpr struct {
	set      []setAction
	remove   []docPath
	add, del []valueAction
	// paths are the paths every action writes, in order of appearance.
	paths []docPath
	refs  []string
	// removeIndex: a REMOVE path has a list index, so the order in which
	// the REMOVEs are applied matters.
	removeIndex bool
}

func parseUpdate(src string) (*updateExpr, *exprError) {
	u := &updateExpr{}
	p, err := parse(src, func(p *parser) { p.update(u) })
	if err != nil {
		return nil, err
	}
	u.refs = p.refs
	return u, nil
}

func (p *parser) update(u *updateExpr) {
	seen := map[string]bool{}
	for p.peek().kind != tEOF {
		t := p.peek()
		clause := strings.ToUpper(t.text)
		if t.kind != tIdent || clause != "SET" && clause != "REMOVE" && clause != "ADD" && clause != "DELETE" {
			p.syntaxError()
		}
		p.i++
		if seen[clause] {
			p.fail("The %q section can only be used once in an update expression;", clause)
		}
		seen[clause] = true
		for {
			path := p.path()
			u.paths = append(u.paths, path)
			switch clause {
			case "SET":
				p.expect("=")
				a := setAction{path: path, l: p.setOperand()}
				if t := p.peek(); t.is("+") || t.is("-") {
					p.i++
					a.op, a.r = t.text, p.setOperand()
				}
				u.set = append(u.set, a)
			case "REMOVE":
				u.remove = append(u.remove, path)
				u.removeIndex = u.removeIndex || slices.ContainsFunc(path, func(e pathElem) bool { return e.isIndex })
			case "ADD":
				u.add = append(u.add, valueAction{path, p.placeholder()})
			case "DELETE":
				u.del = append(u.del, valueAction{path, p.placeholder()})
			}
			if !p.accept(",") {
				break
			}
		}
	}
}

// placeholder parses the :value of ADD and DELETE.
func (p *parser) placeholder() int {
	t := p.peek()
	if t.kind != tValue {
		p.syntaxError()
	}
	p.i++
	return p.ref(t.text)
}

// setOperand parses an operand of SET.
func (p *parser) setOperand() *operand {
	t := p.peek()
	switch {
	case t.kind == tValue:
		p.i++
		return &operand{kind: opValue, ref: p.ref(t.text)}
	case t.kind == tIdent && p.toks[p.i+1].is("("):
		switch t.text {
		case "if_not_exists":
			_, args := p.call(p.setOperand)
			if args[0].kind != opPath {
				p.fail("Operator or function requires a document path; operator or function: if_not_exists")
			}
			return &operand{kind: opIfNotExists, path: args[0].path, args: args[1:]}
		case "list_append":
			_, args := p.call(p.setOperand)
			return &operand{kind: opListAppend, args: args}
		case "attribute_exists", "attribute_not_exists", "attribute_type", "begins_with", "contains", "size":
			p.fail("The function is not allowed in an update expression; function: %s", t.text)
		}
		p.fail("Invalid function name; function: %s", t.text)
	}
	return &operand{kind: opPath, path: p.path()}
}
