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
// names the index of the write in idem.Tx.Writes.
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
// ClientRequestToken is deliberately not set: DynamoDB dedups a token for
// only 10 minutes and answers a repeated token with success without saying
// whether the receipt was ours, which would turn a duplicate into a silent
// second "Executed". The receipt's condition is our idempotency.
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

// commit makes one attempt. again reports that a replaceable record (rec, or
// none when rec is zero) stood in the way instead of the one we expected.
func (s *Store) commit(ctx context.Context, t idem.Transaction, writes []types.TransactWriteItem, old *idem.Record) (rec idem.Record, committed, again bool, err error) {
	receipt, attempts, err := s.receipt(t, old)
	if err != nil {
		return idem.Record{}, false, false, fmt.Errorf("dynamostore: commit %q: %w", t.Key, err)
	}
	items := make([]types.TransactWriteItem, 0, len(writes)+1)
	items = append(items, types.TransactWriteItem{Update: receipt})
	items = append(items, writes...)
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if err == nil {
		return idem.Record{
			Key:           t.Key,
			Status:        idem.StatusCompleted,
			ExpiresAt:     t.ExpiresAt,
			Attempts:      attempts,
			Fingerprint:   t.Fingerprint,
			Result:        t.Result,
			ResultOmitted: t.ResultOmitted,
			UpdatedAt:     t.Now,
		}, true, false, nil
	}

	var canceled *types.TransactionCanceledException
	if !errors.As(err, &canceled) {
		return idem.Record{}, false, false, fmt.Errorf("dynamostore: commit %q: %w", t.Key, err)
	}
	reasons := canceled.CancellationReasons
	// The receipt first: when it is in the way, the effect's conditions may
	// well have failed because the original delivery already applied them.
	if len(reasons) > 0 && aws.ToString(reasons[0].Code) == "ConditionalCheckFailed" {
		rec, found, err := s.inTheWay(ctx, t.Key, reasons[0].Item, t.Now)
		if err != nil {
			return idem.Record{}, false, false, fmt.Errorf("dynamostore: commit %q: %w", t.Key, err)
		}
		// Our own receipt: the SDK retried a request that had committed but
		// whose response was lost.
		mine := found && t.Token != "" && rec.Status == idem.StatusCompleted && rec.Lease == t.Token
		return rec, mine, !found, nil
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
			return idem.Record{}, false, false, fmt.Errorf("dynamostore: commit %q: write %d: %w (%w)", t.Key, i, ErrWriteConditionFailed, err)
		}
	}
	return idem.Record{}, false, false, fmt.Errorf("dynamostore: commit %q: %w", t.Key, err)
}

// receipt is the Update action writing the COMPLETED receipt, and the
// attempts count it writes. With no old record expected it requires none;
// otherwise it requires the replaceable record with old's attempts count, so
// that the count it writes is exact.
func (s *Store) receipt(t idem.Transaction, old *idem.Record) (*types.Update, int, error) {
	n := s.names
	attempts := 1
	cond := name(n.PartitionKey).AttributeNotExists()
	if old != nil {
		attempts = old.Attempts + 1
		seen := name(n.Attempts).AttributeNotExists()
		if old.Attempts != 0 {
			seen = name(n.Attempts).Equal(expression.Value(old.Attempts))
		}
		cond = expression.And(s.takeable(t.Now), seen)
	}
	upd := expression.
		Set(name(n.Status), expression.Value(string(idem.StatusCompleted))).
		Set(name(n.TTL), expression.Value(seconds(t.ExpiresAt))).
		Set(name(n.UpdatedAt), expression.Value(millis(t.Now))).
		Set(name(n.Attempts), expression.Value(attempts)).
		Remove(name(n.LeaseUntil)).
		Remove(name(n.LastError))
	// The token as the lease: a lease-mode attempt left over on the key gets
	// ErrLeaseLost, and a retry of this very commit finds its own receipt.
	upd = setOrRemove(upd, n.Lease, t.Token)
	upd = setOrRemove(upd, n.Fingerprint, t.Fingerprint)
	upd = s.setResult(upd, t.Result, t.ResultOmitted)
	expr, err := expression.NewBuilder().WithCondition(cond).WithUpdate(upd).Build()
	if err != nil {
		return nil, 0, fmt.Errorf("build expression: %w", err)
	}
	return &types.Update{
		TableName:                           aws.String(s.table),
		Key:                                 s.key(t.Key),
		UpdateExpression:                    expr.Update(),
		ConditionExpression:                 expr.Condition(),
		ExpressionAttributeNames:            expr.Names(),
		ExpressionAttributeValues:           expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, attempts, nil
}

// validate checks t.Writes against what DynamoDB would reject, so that a bad
// effect fails with idem.ErrInvalid before any request.
func (s *Store) validate(t idem.Transaction) ([]types.TransactWriteItem, error) {
	if len(t.Writes) > MaxTxWrites {
		return nil, fmt.Errorf("%w: dynamostore: %d transactional writes, at most %d", idem.ErrInvalid, len(t.Writes), MaxTxWrites)
	}
	writes := make([]types.TransactWriteItem, 0, len(t.Writes))
	size := len(t.Key) + len(t.Fingerprint) + len(t.Result) + 512 // the receipt, generously
	for i, w := range t.Writes {
		var item types.TransactWriteItem
		switch w := w.(type) {
		case types.TransactWriteItem:
			item = w
		case *types.TransactWriteItem:
			if w == nil {
				return nil, fmt.Errorf("%w: dynamostore: write %d is a nil *types.TransactWriteItem", idem.ErrInvalid, i)
			}
			item = *w
		default:
			return nil, fmt.Errorf("%w: dynamostore: write %d is a %T, want types.TransactWriteItem", idem.ErrInvalid, i, w)
		}
		table, key, n, err := action(item)
		if err != nil {
			return nil, fmt.Errorf("%w: dynamostore: write %d: %v", idem.ErrInvalid, i, err)
		}
		if table == s.table {
			if pk, ok := key[s.names.PartitionKey].(*types.AttributeValueMemberS); ok && pk.Value == t.Key {
				return nil, fmt.Errorf("%w: dynamostore: write %d targets the receipt's own item (DynamoDB allows one action per item in a transaction)", idem.ErrInvalid, i)
			}
		}
		size += n
		writes = append(writes, item)
	}
	if size > maxTxBytes {
		return nil, fmt.Errorf("%w: dynamostore: transaction is about %d bytes, more than DynamoDB's %d", idem.ErrInvalid, size, maxTxBytes)
	}
	return writes, nil
}

// action returns the table and key (for a Put: the whole item) of the one
// action set on w, and an estimate of its size on the wire.
func action(w types.TransactWriteItem) (table string, key map[string]types.AttributeValue, size int, err error) {
	var (
		set    int
		expr   []*string
		names  map[string]string
		values map[string]types.AttributeValue
	)
	if a := w.ConditionCheck; a != nil {
		set++
		table, key, names, values = aws.ToString(a.TableName), a.Key, a.ExpressionAttributeNames, a.ExpressionAttributeValues
		expr = []*string{a.ConditionExpression}
	}
	if a := w.Delete; a != nil {
		set++
		table, key, names, values = aws.ToString(a.TableName), a.Key, a.ExpressionAttributeNames, a.ExpressionAttributeValues
		expr = []*string{a.ConditionExpression}
	}
	if a := w.Put; a != nil {
		set++
		table, key, names, values = aws.ToString(a.TableName), a.Item, a.ExpressionAttributeNames, a.ExpressionAttributeValues
		expr = []*string{a.ConditionExpression}
	}
	if a := w.Update; a != nil {
		set++
		table, key, names, values = aws.ToString(a.TableName), a.Key, a.ExpressionAttributeNames, a.ExpressionAttributeValues
		expr = []*string{a.ConditionExpression, a.UpdateExpression}
	}
	if set != 1 {
		return "", nil, 0, fmt.Errorf("%d actions set, want exactly one of ConditionCheck, Delete, Put, Update", set)
	}
	if table == "" {
		return "", nil, 0, errors.New("no TableName")
	}
	size = len(table) + mapSize(key) + mapSize(values)
	for _, e := range expr {
		size += len(aws.ToString(e))
	}
	for k, v := range names {
		size += len(k) + len(v)
	}
	return table, key, size, nil
}

func mapSize(m map[string]types.AttributeValue) int {
	n := 0
	for k, v := range m {
		n += len(k) + valueSize(v)
	}
	return n
}

// valueSize follows DynamoDB's item size rules closely enough for a limit
// check: strings and binaries by length, numbers by digits, a small overhead
// per nested element.
func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		return totalLen(v.Value)
	case *types.AttributeValueMemberNS:
		return totalLen(v.Value)
	case *types.AttributeValueMemberBS:
		return totalLen(v.Value)
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		return 3 + mapSize(v.Value) + len(v.Value)
	}
	return 0
}

// totalLen is the summed length of the members of a set.
func totalLen[T ~string | ~[]byte](members []T) int {
	n := 0
	for _, m := range members {
		n += len(m)
	}
	return n
}
