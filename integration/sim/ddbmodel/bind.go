package ddbmodel

import (
	"slices"
	"strings"
)

// Binding a request's placeholders to its names and values, and the
// checks that come with it: undefined and unused placeholders.

// bind reports a parse error or an undefined placeholder, else binds the
// placeholders of an expression.
func (s *Server) bind(parseErr *exprError, refs []string, names map[string]string, values, raw map[string]av) (exprCtx, *exprError) {
	if parseErr != nil {
		return exprCtx{}, parseErr
	}
	c := exprCtx{slots: s.slots(len(refs)), refs: refs, raw: raw}
	for i, r := range refs {
		if r[0] == '#' {
			n, ok := names[r]
			if !ok {
				return exprCtx{}, &exprError{"An expression attribute name used in the document path is not defined; attribute name: " + r}
			}
			c.slots[i].name = n
		} else {
			v, ok := values[r]
			if !ok {
				return exprCtx{}, &exprError{"An expression attribute value used in expression is not defined; attribute value: " + r}
			}
			c.slots[i].value = v
		}
	}
	return c, nil
}

// slots returns n slots from the server's arena, which requests share one
// after the other (they hold s.mu): binding costs no allocation. A slice
// handed out stays valid when the arena grows, it is then just no longer
// part of it.
func (s *Server) slots(n int) []slot {
	if len(s.arena)+n > cap(s.arena) {
		s.arena = make([]slot, 0, max(2*cap(s.arena), n, 64))
	}
	start := len(s.arena)
	s.arena = s.arena[:start+n]
	return s.arena[start : start+n : start+n]
}

// exprPair is the expressions of a request, and usedCounts how many
// distinct names and values they use together.
type (
	exprPair struct {
		upd  *updateExpr
		cond *condExpr
	}
	usedCounts struct{ names, values int }
)

// used counts the distinct placeholders of a request's expressions, once
// per pair of expressions.
func (s *Server) used(x *exprs) usedCounts {
	pair := exprPair{x.upd, x.cond}
	if c, ok := s.counts[pair]; ok {
		return c
	}
	var all []string
	if x.upd != nil {
		all = append(all, x.upd.refs...)
	}
	if x.cond != nil {
		for _, r := range x.cond.refs {
			if !slices.Contains(all, r) {
				all = append(all, r)
			}
		}
	}
	var c usedCounts
	for _, r := range all {
		if r[0] == '#' {
			c.names++
		} else {
			c.values++
		}
	}
	if len(s.counts) >= maxCache {
		clear(s.counts)
	}
	s.counts[pair] = c
	return c
}

// unusedKeys lists, sorted, the keys of m (the names or the values) that no
// expression of x uses.
func unusedKeys[V any](m map[string]V, x *exprs) string {
	var unused []string
	for _, k := range sortedKeys(m) {
		if (x.upd == nil || !slices.Contains(x.upd.refs, k)) && (x.cond == nil || !slices.Contains(x.cond.refs, k)) {
			unused = append(unused, k)
		}
	}
	return strings.Join(unused, ", ")
}
