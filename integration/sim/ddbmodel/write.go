package ddbmodel

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// A write is one action on one item: an UpdateItem, a PutItem, a
// DeleteItem, or an action of a transaction. Evaluating it decides its
// outcome without changing the table, so that a transaction can evaluate
// all its actions against the state before it.

type action int

const (
	actUpdate action = iota
	actPut
	actDelete
	actCheck
)

type write struct {
	t      *table
	key    itemKey
	x      *exprs // nil: no expressions
	action action
	put    item // the item of a put, ingested
}

// target resolves the table and item of an action (it: the Key, or a
// put's Item) and makes the checks DynamoDB makes before it reads the
// item. invalid is DynamoDB's message for a key that does not match the
// schema, which a transaction reports as a cancellation reason; err
// refuses the request.
func (s *Server) target(tableName *string, it item, x *exprs, act action) (w write, invalid string, err error) {
	t, err := s.table(tableName)
	if err != nil {
		return write{}, "", err
	}
	w = write{t: t, x: x, action: act}
	if w.key, invalid = t.key(it, act == actPut); invalid != "" {
		return w, invalid, nil
	}
	if x == nil {
		return w, "", nil
	}
	if invalid = x.checkKeyPaths(t.keyNames()); invalid != "" {
		return w, invalid, nil
	}
	switch {
	case act == actPut:
		var msg string
		if w.put, msg = ingestItem(it); msg != "" {
			return w, "", validation(msg)
		}
		if itemSize(w.put) > s.limit {
			return w, "", validation(msgPutTooLarge)
		}
	case x.upd != nil && x.updCtx.written(x.upd) > s.limit:
		// What the update writes cannot fit, whatever the item:
		// DynamoDB Local refuses it before evaluating anything.
		return w, "", validation(msgUpdateTooLarge)
	}
	return w, "", nil
}

// written is the size of what an update writes, as DynamoDB Local
// estimates it before reading the item: the names of the attributes SET or
// ADDed and the values they are given (measured: a value of 409,600 bytes
// into an attribute "v" is refused whole, one of 409,597 is refused only
// once the item it grows is known).
func (c *exprCtx) written(u *updateExpr) int {
	n := 0
	for _, a := range u.set {
		n += len(c.elemName(a.path[0])) + c.operandValuesSize(a.l)
		if a.r != nil {
			n += c.operandValuesSize(a.r)
		}
	}
	for _, a := range u.add {
		n += len(c.elemName(a.path[0])) + valueSize(c.slots[a.ref].value)
	}
	return n
}

func (c *exprCtx) operandValuesSize(o *operand) int {
	n := 0
	if o.kind == opValue {
		n = valueSize(c.slots[o.ref].value)
	}
	for _, arg := range o.args {
		n += c.operandValuesSize(arg)
	}
	return n
}

// failure is why a write is refused once its item is known: its condition
// failed, or applying it raised a validation error (msg).
type failure struct {
	conditional bool
	msg         string
}

// error is the failure as a single-item operation reports it.
func (f *failure) error(old item, onFailure types.ReturnValuesOnConditionCheckFailure) error {
	if f.conditional {
		return conditionFailed(old, onFailure)
	}
	return validation(f.msg)
}

// reason is the failure as a transaction reports it. DynamoDB Local ends
// the message of a failed ConditionCheck with a period, not the others'.
func (f *failure) reason(old item, w write, onFailure types.ReturnValuesOnConditionCheckFailure) types.CancellationReason {
	if !f.conditional {
		return types.CancellationReason{Code: aws.String("ValidationError"), Message: aws.String(f.msg)}
	}
	r := types.CancellationReason{Code: aws.String("ConditionalCheckFailed"), Message: aws.String(msgConditionFailed)}
	if w.action == actCheck {
		r.Message = aws.String(msgConditionFailed + ".")
	}
	if onFailure == types.ReturnValuesOnConditionCheckFailureAllOld {
		r.Item = cloneItem(old)
	}
	return r
}

// evaluate returns the item before the write and after it (nil: deleted),
// or why the write is refused: first its condition, then the update, then
// the size of the new item.
func (s *Server) evaluate(w write) (old, next item, f *failure) {
	old = w.t.items[w.key]
	if w.x != nil && w.x.cond != nil && !w.x.condCtx.eval(w.x.cond.root, old) {
		return old, nil, &failure{conditional: true}
	}
	switch w.action {
	case actDelete:
		return old, nil, nil
	case actCheck:
		return old, old, nil
	case actPut:
		return old, w.put, nil // its size was checked by target
	}
	next = old
	fresh := next == nil
	if fresh {
		next = w.t.keyItem(w.key)
	}
	if w.x != nil && w.x.upd != nil {
		if msg := w.x.updCtx.keyUpdate(w.x.upd, w.t.keyNames()); msg != "" {
			return old, nil, &failure{msg: msg}
		}
		var msg string
		if next, msg = w.x.updCtx.apply(w.x.upd, next, fresh); msg != "" {
			return old, nil, &failure{msg: msg}
		}
	}
	if itemSize(next) > s.limit {
		return old, nil, &failure{msg: msgUpdateTooLarge}
	}
	return old, next, nil
}
