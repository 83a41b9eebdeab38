package dynamostore

import (
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

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
		if table == s.table && s.isReceiptKey(key, t.Key) {
			return nil, fmt.Errorf("%w: dynamostore: write %d targets the receipt's own item (DynamoDB allows one action per item in a transaction)", idem.ErrInvalid, i)
		}
		size += n
		writes = append(writes, item)
	}
	if size > maxTxBytes {
		return nil, fmt.Errorf("%w: dynamostore: transaction is about %d bytes, more than DynamoDB's %d", idem.ErrInvalid, size, maxTxBytes)
	}
	return writes, nil
}

// isReceiptKey reports whether key (or a Put's whole item) addresses the
// receipt stored under storageKey.
func (s *Store) isReceiptKey(key map[string]types.AttributeValue, storageKey string) bool {
	for attr, want := range s.key(storageKey) {
		got, ok := key[attr].(*types.AttributeValueMemberS)
		if !ok || got.Value != want.(*types.AttributeValueMemberS).Value {
			return false
		}
	}
	return true
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
