package ddbmodel

import (
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// A document path: a top-level attribute name, then map keys (.name) and
// list indexes ([n]). Names may be #placeholders, resolved per request
// through ExpressionAttributeNames, so a parsed path is shared by every
// request that sends the same expression text.

type pathElem struct {
	name    string // attribute or map key, when ref is -1
	ref     int    // else the index of its #placeholder in the expression's refs
	index   int    // list index, when isIndex
	isIndex bool
}

type docPath []pathElem

// path parses a document path.
func (p *parser) path() docPath {
	path := docPath{p.pathName()}
	for {
		switch {
		case p.accept("."):
			path = append(path, p.pathName())
		case p.accept("["):
			t := p.next()
			if t.kind != tNumber {
				p.i--
				p.syntaxError()
			}
			n, err := strconv.Atoi(t.text)
			if err != nil {
				p.fail("List index is not within the allowable range; index: [%s]", t.text)
			}
			p.expect("]")
			path = append(path, pathElem{ref: -1, index: n, isIndex: true})
		default:
			return path
		}
	}
}

// keywords are the reserved words the grammar itself uses: where a name is
// expected they are a syntax error rather than a reserved name.
var keywords = map[string]bool{"add": true, "and": true, "between": true, "delete": true, "in": true, "not": true, "or": true, "remove": true, "set": true}

func (p *parser) pathName() pathElem {
	t := p.peek()
	switch {
	case t.kind == tName:
		p.i++
		return pathElem{ref: p.ref(t.text)}
	case t.kind == tIdent && !keywords[strings.ToLower(t.text)]:
		if reserved[strings.ToLower(t.text)] {
			p.fail("Attribute name is a reserved keyword; reserved keyword: %s", t.text)
		}
		p.i++
		return pathElem{name: t.text, ref: -1}
	}
	p.syntaxError()
	return pathElem{}
}

// elemName is the attribute or key name of e in a request.
func (c *exprCtx) elemName(e pathElem) string {
	if e.ref >= 0 {
		return c.slots[e.ref].name
	}
	return e.name
}

// render writes a path as DynamoDB's errors do: [m, k, [0]].
func (c *exprCtx) render(p docPath) string {
	parts := make([]string, len(p))
	for i, e := range p {
		if e.isIndex {
			parts[i] = "[" + strconv.Itoa(e.index) + "]"
		} else {
			parts[i] = c.elemName(e)
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// get returns the value at p in m.
func (c *exprCtx) get(m item, p docPath) (av, bool) {
	v, ok := m[c.elemName(p[0])]
	for _, e := range p[1:] {
		if !ok {
			return nil, false
		}
		v, ok = c.child(v, e)
	}
	return v, ok
}

// child returns the element e of a list or map value.
func (c *exprCtx) child(v av, e pathElem) (av, bool) {
	if e.isIndex {
		l, ok := v.(*types.AttributeValueMemberL)
		if !ok || e.index >= len(l.Value) {
			return nil, false
		}
		return l.Value[e.index], true
	}
	m, ok := v.(*types.AttributeValueMemberM)
	if !ok {
		return nil, false
	}
	v, ok = m.Value[c.elemName(e)]
	return v, ok
}

// set puts v at p in m, a map of the request's own, copying the lists and
// maps on the way. A list index past the end appends. false: the path's
// parent does not exist or is not a list or map ("invalid for update").
func (c *exprCtx) set(m item, p docPath, v av) bool {
	top := c.elemName(p[0])
	if len(p) == 1 {
		m[top] = v
		return true
	}
	parent, ok := m[top]
	if !ok {
		return false
	}
	nv, ok := c.setIn(parent, p[1:], v)
	if ok {
		m[top] = nv
	}
	return ok
}

func (c *exprCtx) setIn(container av, p docPath, v av) (av, bool) {
	e := p[0]
	if e.isIndex {
		l, ok := container.(*types.AttributeValueMemberL)
		if !ok {
			return nil, false
		}
		list := slices.Clone(l.Value)
		switch {
		case len(p) == 1 && e.index >= len(list):
			list = append(list, v)
		case len(p) == 1:
			list[e.index] = v
		case e.index >= len(list):
			return nil, false
		default:
			if list[e.index], ok = c.setIn(list[e.index], p[1:], v); !ok {
				return nil, false
			}
		}
		return &types.AttributeValueMemberL{Value: list}, true
	}
	mv, ok := container.(*types.AttributeValueMemberM)
	if !ok {
		return nil, false
	}
	key := c.elemName(e)
	m := make(item, len(mv.Value)+1)
	for k, x := range mv.Value {
		m[k] = x
	}
	if len(p) == 1 {
		m[key] = v
		return &types.AttributeValueMemberM{Value: m}, true
	}
	child, ok := m[key]
	if !ok {
		return nil, false
	}
	if m[key], ok = c.setIn(child, p[1:], v); !ok {
		return nil, false
	}
	return &types.AttributeValueMemberM{Value: m}, true
}

// remove deletes p from m, a map of the request's own. A missing last
// element is no change; false: a missing or scalar parent.
func (c *exprCtx) remove(m item, p docPath) bool {
	top := c.elemName(p[0])
	if len(p) == 1 {
		delete(m, top)
		return true
	}
	parent, ok := m[top]
	if !ok {
		return false
	}
	nv, ok := c.removeIn(parent, p[1:])
	if ok {
		m[top] = nv
	}
	return ok
}

func (c *exprCtx) removeIn(container av, p docPath) (av, bool) {
	e := p[0]
	if e.isIndex {
		l, ok := container.(*types.AttributeValueMemberL)
		switch {
		case !ok:
			return nil, false
		case e.index >= len(l.Value):
			return l, len(p) == 1
		case len(p) == 1:
			return &types.AttributeValueMemberL{Value: slices.Delete(slices.Clone(l.Value), e.index, e.index+1)}, true
		}
		child, ok := c.removeIn(l.Value[e.index], p[1:])
		if !ok {
			return nil, false
		}
		list := slices.Clone(l.Value)
		list[e.index] = child
		return &types.AttributeValueMemberL{Value: list}, true
	}
	mv, ok := container.(*types.AttributeValueMemberM)
	if !ok {
		return nil, false
	}
	key := c.elemName(e)
	child, found := mv.Value[key]
	if !found {
		return mv, len(p) == 1
	}
	m := make(item, len(mv.Value))
	for k, x := range mv.Value {
		m[k] = x
	}
	if len(p) == 1 {
		delete(m, key)
	} else if m[key], ok = c.removeIn(child, p[1:]); !ok {
		return nil, false
	}
	return &types.AttributeValueMemberM{Value: m}, true
}

// relation is how two paths of one update expression relate.
type relation int

const (
	disjoint relation = iota
	overlapping
	conflicting // a map key and a list index at the same place
)

func (c *exprCtx) relate(a, b docPath) relation {
	for i := range min(len(a), len(b)) {
		x, y := a[i], b[i]
		switch {
		case x.isIndex != y.isIndex:
			return conflicting
		case x.isIndex && x.index != y.index, !x.isIndex && c.elemName(x) != c.elemName(y):
			return disjoint
		}
	}
	return overlapping
}

// removeOrder sorts REMOVE paths so that a later index of a list goes
// before an earlier one: every index names an element of the original list.
func (c *exprCtx) removeOrder(a, b docPath) int {
	for i := range min(len(a), len(b)) {
		x, y := a[i], b[i]
		switch {
		case x.isIndex && y.isIndex && x.index != y.index:
			return cmpInt(y.index, x.index)
		case !x.isIndex && !y.isIndex && c.elemName(x) != c.elemName(y):
			return strings.Compare(c.elemName(x), c.elemName(y))
		}
	}
	return 0
}
