package dynamostore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// What an operator writes (idemctl resolve). Resolve is the one write of
// the Store that is not an attempt's: the Guard never calls it.

// resolveTokenPrefix begins the lease token of a receipt written by
// Resolve. A Guard's tokens are hex, so no attempt's token has it.
const resolveTokenPrefix = "idemctl-"

// notDoneReason is the last error of a record released by Resolve to
// FAILED, for whoever reads it next.
const notDoneReason = "idemctl resolve --not-done: an operator found the effect did not happen"

// isResolved reports whether a record carrying the resolved attribute is
// the receipt Resolve wrote: acquires and commits remove the attribute, so
// only a COMPLETED record Resolve wrote carries it.
func isResolved(flag bool, rec idem.Record) bool {
	return flag && rec.Status == idem.StatusCompleted
}

// Resolve writes what an operator decided about the record under skey after
// checking downstream (idemctl resolve): to is idem.StatusCompleted (the
// effect took place: a receipt with no result, marked Resolved) or
// idem.StatusFailed (it did not: the next copy runs it). It writes only
// if the record is still exactly old — lease (the fencing token), status,
// attempts and update time — and otherwise writes nothing and returns
// changed = true with the record as it is now. A record without an
// expiry (HELD) gets expires; now is the write's time.
//
// The lease alone, which fences Complete and Release, is not enough here:
// an attempt that outlived its lease (a zombie) still holds the token, and
// its late receipt keeps it while changing the status; a release fenced by
// the token alone would turn that receipt into FAILED and let a copy run
// the effect again.
//
// COMPLETED is written under a new token of Resolve's own, so that the
// zombie's late release cannot undo it; it keeps no result
// (ResultOmitted) and carries the resolved attribute. FAILED keeps the
// token: if the zombie's receipt lands after all, the effect did happen
// and the receipt is the truth. Either keeps the record's attempts, and
// its expiry if it has one.
//
// A record that is gone is changed too: the zero Record (Status ""). A
// write that landed but whose response was lost, sent again, finds the
// record it wrote and reports it as written. Transient errors are retried
// a few times, as a Release's.
func (s *Store) Resolve(ctx context.Context, skey string, old idem.Record, to idem.Status, expires, now time.Time) (rec idem.Record, changed bool, err error) {
	switch {
	case to != idem.StatusCompleted && to != idem.StatusFailed:
		return idem.Record{}, false, fmt.Errorf("%w: dynamostore: resolve %q to %q: only COMPLETED or FAILED", idem.ErrInvalid, skey, to)
	case old.ExpiresAt.IsZero() && expires.IsZero():
		return idem.Record{}, false, fmt.Errorf("%w: dynamostore: resolve %q: the record has no expiry and none was given", idem.ErrInvalid, skey)
	}
	lease := old.Lease
	if to == idem.StatusCompleted {
		lease = resolveTokenPrefix + rand.Text()
	}
	in, err := s.resolveInput(skey, old, to, lease, expires, now)
	if err != nil {
		return idem.Record{}, false, fmt.Errorf("dynamostore: resolve %q: %w", skey, err)
	}
	var out *dynamodb.UpdateItemOutput
	err = s.retry(ctx, releaseTries, func(ctx context.Context) error {
		var err error
		out, err = s.client.UpdateItem(ctx, in, noSDKRetries)
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		if len(ccf.Item) == 0 {
			return idem.Record{}, true, nil // gone
		}
		cur, err := s.decode(ccf.Item)
		if err != nil {
			return idem.Record{}, false, fmt.Errorf("dynamostore: resolve %q: %w", skey, err)
		}
		// A retry of a write that had landed (its answer was lost) finds
		// the record it wrote.
		mine := cur.Status == to && cur.Lease == lease && cur.Attempts == old.Attempts && cur.UpdatedAt.UnixMilli() == now.UnixMilli()
		return cur, !mine, nil
	case err != nil:
		return idem.Record{}, false, fmt.Errorf("dynamostore: resolve %q: %w", skey, invalid(err))
	}
	rec, err = s.decode(out.Attributes)
	if err != nil {
		return idem.Record{}, false, fmt.Errorf("dynamostore: resolve %q: %w", skey, err)
	}
	return rec, false, nil
}

// resolveInput is Resolve's UpdateItem: built per call, unlike the
// attempts' expressions, since an operator writes rarely.
func (s *Store) resolveInput(skey string, old idem.Record, to idem.Status, lease string, expires, now time.Time) (*dynamodb.UpdateItemInput, error) {
	n := s.names
	cond := name(s.storageKeyAttr()).AttributeExists().And(
		same(n.Lease, old.Lease != "", old.Lease),
		same(n.Status, true, string(old.Status)),
		same(n.Attempts, old.Attempts != 0, old.Attempts),
		same(n.UpdatedAt, !old.UpdatedAt.IsZero(), millis(old.UpdatedAt)),
	)
	upd := expression.Set(name(n.Status), expression.Value(string(to))).
		Set(name(n.UpdatedAt), expression.Value(millis(now)))
	if old.ExpiresAt.IsZero() {
		// A HELD record has none: what is settled must not stay for ever.
		upd = upd.Set(name(n.TTL), expression.Value(seconds(expires)))
	}
	if to == idem.StatusCompleted {
		upd = upd.Set(name(n.Lease), expression.Value(lease)).
			Set(name(n.NoResult), expression.Value(true)).
			Set(name(n.Resolved), expression.Value(true)).
			Remove(name(n.Result)).
			Remove(name(n.LastError))
	} else {
		upd = upd.Set(name(n.LastError), expression.Value(notDoneReason))
	}
	x, err := expression.NewBuilder().WithCondition(cond).WithUpdate(upd).Build()
	if err != nil {
		return nil, fmt.Errorf("build the write: %w", err)
	}
	return &dynamodb.UpdateItemInput{
		TableName:                           s.tableName,
		Key:                                 s.key(skey),
		ConditionExpression:                 x.Condition(),
		UpdateExpression:                    x.Update(),
		ExpressionAttributeNames:            x.Names(),
		ExpressionAttributeValues:           x.Values(),
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, nil
}

// same is the condition that attribute n still has value v, or, when it
// had none, still has none.
func same(n string, present bool, v any) expression.ConditionBuilder {
	if !present {
		return name(n).AttributeNotExists()
	}
	return name(n).Equal(expression.Value(v))
}
