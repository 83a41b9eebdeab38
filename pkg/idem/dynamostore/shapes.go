package dynamostore

import (
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The expressions of the Store, built once per shape (see expr.go). Every
// value is a slot, filled per request.

// name is a schema attribute in an expression: the name as it is, never a
// document path (expression.Name reads "lease.until" as the attribute
// until inside lease, and every request would fail).
func name(n string) expression.NameBuilder { return expression.NameNoDotSplit(n) }

// takeable is the condition of Acquire and Commit: the record is absent,
// expired, FAILED, UNKNOWN, or IN_PROGRESS with a lease that ran out; never
// HELD (which has no expiry either). It mirrors idemtest's in-memory store
// and isTakeable.
func (s *Store) takeable() expression.ConditionBuilder {
	n := s.names
	return expression.Or(
		name(n.PartitionKey).AttributeNotExists(),
		name(n.TTL).LessThan(slotNowSeconds.marker()),
		name(n.Status).Equal(slotFailed.marker()),
		name(n.Status).Equal(slotUnknown.marker()),
		expression.And(
			name(n.Status).Equal(slotInProgress.marker()),
			name(n.LeaseUntil).LessThan(slotNowMillis.marker()),
		),
	)
}

// fencing is the condition of Complete and Release: the record exists and
// this attempt's lease holds it.
func (s *Store) fencing() expression.ConditionBuilder {
	return expression.And(
		name(s.names.PartitionKey).AttributeExists(),
		name(s.names.Lease).Equal(slotLease.marker()),
	)
}

func (s *Store) acquireExpr(shape acquireShape) expression.Builder {
	n := s.names
	upd := expression.
		Set(name(n.Status), slotInProgress.marker()).
		Set(name(n.Lease), slotLease.marker()).
		Set(name(n.LeaseUntil), slotLeaseUntil.marker()).
		Set(name(n.TTL), slotExpiresAt.marker()).
		Set(name(n.UpdatedAt), slotUpdatedAt.marker()).
		Set(name(n.PrevStatus), expression.IfNotExists(name(n.Status), slotNone.marker())).
		Set(name(n.PrevLease), expression.IfNotExists(name(n.Lease), slotNone.marker())).
		Set(name(n.PrevExpiresAt), expression.IfNotExists(name(n.TTL), slotZero.marker())).
		Add(name(n.Attempts), slotOne.marker()).
		Remove(name(n.Resolved)) // an attempt's record, no operator's receipt
	upd = setOrRemove(upd, n.Fingerprint, slotFingerprint, shape.fingerprint)
	upd = s.setResult(upd, resultNone)
	return expression.NewBuilder().WithCondition(s.takeable()).WithUpdate(upd)
}

func (s *Store) completeExpr(shape completeShape) expression.Builder {
	n := s.names
	upd := expression.
		Set(name(n.Status), slotStatus.marker()).
		Set(name(n.TTL), slotExpiresAt.marker()).
		Set(name(n.UpdatedAt), slotUpdatedAt.marker()).
		Remove(name(n.LastError))
	upd = s.setResult(upd, shape.result)
	return expression.NewBuilder().WithCondition(s.fencing()).WithUpdate(upd)
}

func (s *Store) releaseExpr(shape releaseShape) expression.Builder {
	n := s.names
	upd := expression.
		Set(name(n.Status), slotStatus.marker()).
		Set(name(n.UpdatedAt), slotUpdatedAt.marker()).
		Set(name(n.Released), slotLease.marker())
	upd = setOrRemove(upd, n.LastError, slotLastError, shape.reason)
	if shape.held {
		// Nothing held is deleted silently: no TTL.
		upd = upd.Remove(name(n.TTL))
	}
	return expression.NewBuilder().WithCondition(s.fencing()).WithUpdate(upd)
}

// resultShape is what an update does with the stored result.
type resultShape int

const (
	resultNone    resultShape = iota // no result: remove both attributes
	resultKept                       // set the result
	resultOmitted                    // set the omitted marker
)

func resultShapeOf(result []byte, omitted bool) resultShape {
	switch {
	case len(result) > 0:
		return resultKept
	case omitted:
		return resultOmitted
	}
	return resultNone
}

// setResult writes the stored result, or the omitted marker, and removes the
// other one, so that items carry no empty attributes.
func (s *Store) setResult(u expression.UpdateBuilder, shape resultShape) expression.UpdateBuilder {
	u = setOrRemove(u, s.names.Result, slotResult, shape == resultKept)
	return setOrRemove(u, s.names.NoResult, slotOmitted, shape == resultOmitted)
}

// addResult puts the values setResult's shape needs into vals.
func addResult(vals map[slot]types.AttributeValue, result []byte, omitted bool) {
	switch resultShapeOf(result, omitted) {
	case resultKept:
		vals[slotResult] = bin(result)
	case resultOmitted:
		vals[slotOmitted] = avTrue
	}
}

// setOrRemove sets attribute n to the value of v when set, else removes it.
func setOrRemove(u expression.UpdateBuilder, n string, v slot, set bool) expression.UpdateBuilder {
	if set {
		return u.Set(name(n), v.marker())
	}
	return u.Remove(name(n))
}
