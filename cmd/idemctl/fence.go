package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// notDoneReason is the last error of a record released by resolve
// --not-done, for whoever reads it next.
const notDoneReason = "idemctl resolve --not-done: an operator found the effect did not happen"

// settle writes what an operator decided about the record under skey, on
// the condition that it is still exactly old: the same lease token — the
// fencing token —, status, attempts and update time. dynamostore's own
// Complete and Release are fenced by the token alone, which is not enough
// here: an attempt that outlived its lease (a zombie) still holds the
// token, and its late receipt would keep it while changing the status; a
// release fenced by the token alone would then turn that receipt into
// FAILED and let a copy run the effect again. A record that changed is
// errChanged, with the record as it is now, and nothing is written.
//
// to COMPLETED writes the receipt under a new token of idemctl's own, so
// that the zombie's late release cannot undo it. to FAILED keeps the
// token: if the zombie's receipt lands after all, the effect did happen
// and the receipt is the truth.
//
// expires is the record's expiry after the write: a record without one (a
// HELD record, which never expires until it is settled) gets it, so that
// the receipt or the release lasts as long as the consumer's own would;
// any other keeps its own.
func (rc *receipts) settle(ctx context.Context, skey string, old idem.Record, to idem.Status, expires, now time.Time) (idem.Record, error) {
	cond := name(rc.keyAttr()).AttributeExists().And(
		same(schema.Lease, old.Lease != "", old.Lease),
		same(schema.Status, true, string(old.Status)),
		same(schema.Attempts, old.Attempts != 0, old.Attempts),
		same(schema.UpdatedAt, !old.UpdatedAt.IsZero(), old.UpdatedAt.UnixMilli()),
	)
	written := now.UnixMilli()
	upd := expression.Set(name(schema.Status), expression.Value(string(to))).
		Set(name(schema.UpdatedAt), expression.Value(written))
	if old.ExpiresAt.IsZero() {
		upd = upd.Set(name(schema.TTL), expression.Value(expires.Unix()))
	}
	lease := old.Lease
	if to == idem.StatusCompleted {
		lease = "idemctl-" + rand.Text()
		upd = upd.Set(name(schema.Lease), expression.Value(lease)).Remove(name(schema.LastError))
	} else {
		upd = upd.Set(name(schema.LastError), expression.Value(notDoneReason))
	}
	x, err := expression.NewBuilder().WithCondition(cond).WithUpdate(upd).Build()
	if err != nil {
		return idem.Record{}, fmt.Errorf("build the write: %w", err)
	}
	out, err := rc.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(rc.table),
		Key:                                 rc.key(skey),
		ConditionExpression:                 x.Condition(),
		UpdateExpression:                    x.Update(),
		ExpressionAttributeNames:            x.Names(),
		ExpressionAttributeValues:           x.Values(),
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if len(ccf.Item) == 0 {
			return idem.Record{}, fmt.Errorf("%w: it is gone", errChanged)
		}
		cur, derr := rc.store.Decode(ccf.Item)
		if derr != nil {
			return idem.Record{}, derr
		}
		// The SDK retried a write that had landed (its answer was lost):
		// the record is the one we wrote.
		if cur.Status == to && cur.Lease == lease && cur.Attempts == old.Attempts && cur.UpdatedAt.UnixMilli() == written {
			return cur, nil
		}
		return cur, errChanged
	}
	if err != nil {
		return idem.Record{}, fmt.Errorf("write record: %w", err)
	}
	return rc.store.Decode(out.Attributes)
}

// same is the condition that attribute n still has value v, or, when it
// had none, still has none.
func same(n string, present bool, v any) expression.ConditionBuilder {
	if !present {
		return name(n).AttributeNotExists()
	}
	return name(n).Equal(expression.Value(v))
}
