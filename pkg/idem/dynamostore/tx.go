package dynamostore

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// ErrWriteConditionFailed: the condition of one of the effect's own writes
// failed, so the transaction, receipt included, was cancelled. The error
// names the index of the write in idem.TxEffect.Writes, and wraps
// idem.ErrTxAborted (the Guard's outcome is Failed).
var ErrWriteConditionFailed = errors.New("dynamostore: transactional write condition failed")

// DynamoDB limits of TransactWriteItems.
const (
	// MaxTxWrites is the most writes an effect can return: DynamoDB allows
	// 100 actions per transaction and the receipt is one of them.
	MaxTxWrites = 99
	// maxTxBytes is DynamoDB's limit on the total size of a transaction.
	maxTxBytes = 4 << 20
	// commitTries bounds how often Commit chases a record that changes under
	// it (taken, released, expired) before reporting ErrInProgress.
	commitTries = 3
)

// Commit implements idem.TxStore: one TransactWriteItems holding an Update
// of the receipt, conditioned like Acquire, and t.Writes, which must be
// types.TransactWriteItem or *types.TransactWriteItem values.
//
// For a new key (the common case) that is the only request, and for a
// duplicate too: DynamoDB returns the receipt in the way. When a record that
// may be replaced stands in the way (FAILED, an expired lease, an expired
// receipt TTL has not deleted yet), Commit reads it from the cancellation and
// commits again pinned to its attempts count, so Attempts on the new receipt
// is exact: two requests in that rare case.
//
// The receipt's condition and the commit's token (written as its lease) are
// its idempotency: a retried commit whose first request landed finds its
// own receipt. The SDK also fills in a ClientRequestToken (the client's
// idempotency token) into the input, which the Store's retries send again:
// DynamoDB then answers a retry of a commit that landed with success,
// applying nothing — the same outcome, Executed, reached sooner.
func (s *Store) Commit(ctx context.Context, t idem.Transaction) (idem.Record, bool, error) {
	writes, err := s.validate(t)
	if err != nil {
		return idem.Record{}, false, err
	}
	var old *idem.Record // the replaceable record we expect, nil for none
	for range commitTries {
		rec, committed, again, err := s.commit(ctx, t, writes, old)
		if !again {
			return rec, committed, err
		}
		if rec.Key == "" {
			old = nil
		} else {
			old = &rec
		}
	}
	return idem.Record{}, false, fmt.Errorf("dynamostore: commit %q: record changing concurrently: %w", t.Key, idem.ErrInProgress)
}

// commit makes one attempt (with retries of transient errors). again
// reports that a replaceable record (rec, or none when rec is zero) stood
// in the way instead of the one we expected.
func (s *Store) commit(ctx context.Context, t idem.Transaction, writes []types.TransactWriteItem, old *idem.Record) (rec idem.Record, committed, again bool, err error) {
	receipt, attempts, err := s.receipt(t, old)
	if err != nil {
		return idem.Record{}, false, false, fmt.Errorf("dynamostore: commit %q: %w", t.Key, err)
	}
	items := make([]types.TransactWriteItem, 0, len(writes)+1)
	items = append(items, types.TransactWriteItem{Update: receipt})
	items = append(items, writes...)
	in := &dynamodb.TransactWriteItemsInput{TransactItems: items}
	err = s.retry(ctx, acquireTries, func(ctx context.Context) error {
		_, err := s.client.TransactWriteItems(ctx, in, noSDKRetries)
		return err
	})
	if err == nil {
		return idem.Record{
			Key:           t.Key,
			Status:        idem.StatusCompleted,
			Lease:         t.Token,
			ExpiresAt:     t.ExpiresAt,
			Attempts:      attempts,
			Fingerprint:   t.Fingerprint,
			Result:        t.Result,
			ResultOmitted: t.ResultOmitted,
			UpdatedAt:     t.Now,
		}, true, false, nil
	}
	if len(t.Result) > 0 && tooLarge(err) {
		return idem.Record{}, false, false, fmt.Errorf("dynamostore: commit %q: %w (%w)", t.Key, idem.ErrResultTooLarge, err)
	}

	var canceled *types.TransactionCanceledException
	if !errors.As(err, &canceled) {
		return idem.Record{}, false, false, fmt.Errorf("dynamostore: commit %q: %w", t.Key, invalid(err))
	}
	reasons := canceled.CancellationReasons
	// The receipt first: when it is in the way, the effect's conditions may
	// well have failed because the original delivery already applied them.
	if len(reasons) > 0 {
		switch aws.ToString(reasons[0].Code) {
		case "ConditionalCheckFailed":
			rec, found, err := s.inTheWay(ctx, t.Key, reasons[0].Item, t.Now)
			if err != nil {
				return idem.Record{}, false, false, fmt.Errorf("dynamostore: commit %q: %w", t.Key, err)
			}
			// Our own receipt: a request that had committed but whose
			// response was lost, sent again.
			mine := found && t.Token != "" && rec.Status == idem.StatusCompleted && rec.Lease == t.Token
			return rec, mine, !found, nil
		case "ValidationError":
			if len(t.Result) > 0 && tooLargeReason(reasons[0]) {
				return idem.Record{}, false, false, fmt.Errorf("dynamostore: commit %q: %w (%w)", t.Key, idem.ErrResultTooLarge, err)
			}
		}
	}
	for _, r := range reasons {
		if aws.ToString(r.Code) == "TransactionConflict" {
			// Another transaction (most likely a copy of this message) holds
			// one of the items: it will win or lose on its own; retry later.
			return idem.Record{}, false, false, fmt.Errorf("dynamostore: commit %q: %w: %w", t.Key, idem.ErrInProgress, err)
		}
	}
	for i, r := range reasons[min(1, len(reasons)):] {
		if aws.ToString(r.Code) == "ConditionalCheckFailed" {
			return idem.Record{}, false, false, fmt.Errorf("dynamostore: commit %q: write %d: %w: %w (%w)", t.Key, i, ErrWriteConditionFailed, idem.ErrTxAborted, err)
		}
	}
	for i, r := range reasons {
		if aws.ToString(r.Code) == "ValidationError" {
			// A write DynamoDB cannot run (its key does not match its
			// table's schema, its expression is wrong, its item too
			// large): the effect's mistake, or the receipt's table's.
			return idem.Record{}, false, false, fmt.Errorf("dynamostore: commit %q: item %d (0 is the receipt) refused: %w: %w", t.Key, i, idem.ErrInvalid, err)
		}
	}
	return idem.Record{}, false, false, fmt.Errorf("dynamostore: commit %q: %w", t.Key, err)
}

type oldShape int

const (
	oldNone       oldShape = iota // no record expected
	oldAttempts                   // a replaceable record with a known attempts count
	oldNoAttempts                 // a replaceable record without one
)

type receiptShape struct {
	oldRecord          oldShape
	result             resultShape
	fingerprint, token bool
}

// receipt is the Update action writing the COMPLETED receipt, and the
// attempts count it writes. With no old record expected it requires none;
// otherwise it requires the replaceable record with old's attempts count, so
// that the count it writes is exact.
func (s *Store) receipt(t idem.Transaction, old *idem.Record) (*types.Update, int, error) {
	shape := receiptShape{result: resultShapeOf(t.Result, t.ResultOmitted), fingerprint: t.Fingerprint != "", token: t.Token != ""}
	attempts := 1
	vals := map[slot]types.AttributeValue{
		slotStatus:      str(string(idem.StatusCompleted)),
		slotExpiresAt:   num(seconds(t.ExpiresAt)),
		slotUpdatedAt:   num(millis(t.Now)),
		slotLease:       str(t.Token),
		slotFingerprint: str(t.Fingerprint),
	}
	if old != nil {
		attempts = old.Attempts + 1
		shape.oldRecord = oldNoAttempts
		if old.Attempts != 0 {
			shape.oldRecord = oldAttempts
			vals[slotOldAttempts] = num(int64(old.Attempts))
		}
		vals[slotNowSeconds] = num(seconds(t.Now))
		vals[slotNowMillis] = num(millis(t.Now))
		vals[slotFailed] = avFailed
		vals[slotUnknown] = avUnknown
		vals[slotInProgress] = str(string(idem.StatusInProgress))
	}
	vals[slotAttempts] = num(int64(attempts))
	addResult(vals, t.Result, t.ResultOmitted)
	x, err := s.exprs.get(shape, func() expression.Builder { return s.receiptExpr(shape) })
	if err != nil {
		return nil, 0, err
	}
	values, err := x.values(vals)
	if err != nil {
		return nil, 0, err
	}
	return &types.Update{
		TableName:                           aws.String(s.table),
		Key:                                 s.key(t.Key),
		UpdateExpression:                    x.update,
		ConditionExpression:                 x.condition,
		ExpressionAttributeNames:            x.names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, attempts, nil
}

func (s *Store) receiptExpr(shape receiptShape) expression.Builder {
	n := s.names
	cond := name(n.PartitionKey).AttributeNotExists()
	switch shape.oldRecord {
	case oldAttempts:
		cond = expression.And(s.takeable(), name(n.Attempts).Equal(slotOldAttempts.marker()))
	case oldNoAttempts:
		cond = expression.And(s.takeable(), name(n.Attempts).AttributeNotExists())
	}
	upd := expression.
		Set(name(n.Status), slotStatus.marker()).
		Set(name(n.TTL), slotExpiresAt.marker()).
		Set(name(n.UpdatedAt), slotUpdatedAt.marker()).
		Set(name(n.Attempts), slotAttempts.marker()).
		Remove(name(n.LeaseUntil)).
		Remove(name(n.LastError)).
		Remove(name(n.Resolved))
	// The token as the lease: a lease-mode attempt left over on the key gets
	// ErrLeaseLost, and a retry of this very commit finds its own receipt.
	upd = setOrRemove(upd, n.Lease, slotLease, shape.token)
	upd = setOrRemove(upd, n.Fingerprint, slotFingerprint, shape.fingerprint)
	upd = s.setResult(upd, shape.result)
	return expression.NewBuilder().WithCondition(cond).WithUpdate(upd)
}

// tooLargeReason reports whether a cancellation reason is the receipt's
// item refused for its size.
func tooLargeReason(r types.CancellationReason) bool {
	return tooLargeMessage(aws.ToString(r.Message))
}
