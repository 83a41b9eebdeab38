package dynamostore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

var txn = idem.Transaction{
	Key: "ns#abc", Token: "tok", ExpiresAt: t0.Add(time.Hour), Fingerprint: "fp", Now: t0,
	Result: []byte("ok"),
}

func ledgerWrite(id string) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                aws.String("ledger"),
		Key:                      map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}},
		UpdateExpression:         aws.String("ADD #n :one"),
		ExpressionAttributeNames: map[string]string{"#n": "n"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one": &types.AttributeValueMemberN{Value: "1"},
		},
	}}
}

func withWrites(w ...any) idem.Transaction {
	t := txn
	t.Writes = w
	return t
}

func TestCommitValidatesBeforeAnyCall(t *testing.T) {
	w := ledgerWrite("a")
	many := make([]any, MaxTxWrites+1)
	for i := range many {
		many[i] = ledgerWrite("a")
	}
	big := ledgerWrite("a")
	big.Update.ExpressionAttributeValues = map[string]types.AttributeValue{
		":blob": &types.AttributeValueMemberB{Value: make([]byte, 300<<10)},
	}
	bigs := make([]any, 14) // 14 × 300 KB > 4 MB
	for i := range bigs {
		bigs[i] = big
	}
	for name, tx := range map[string]idem.Transaction{
		"too many writes":      withWrites(many...),
		"wrong type":           withWrites(w, "PUT ledger"),
		"nil pointer":          withWrites((*types.TransactWriteItem)(nil)),
		"no action":            withWrites(types.TransactWriteItem{}),
		"two actions":          withWrites(types.TransactWriteItem{Put: &types.Put{TableName: aws.String("l")}, Delete: &types.Delete{TableName: aws.String("l")}}),
		"no table":             withWrites(types.TransactWriteItem{Delete: &types.Delete{}}),
		"receipt item (put)":   withWrites(types.TransactWriteItem{Put: &types.Put{TableName: aws.String("receipts"), Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "ns#abc"}}}}),
		"receipt item (check)": withWrites(&types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: aws.String("receipts"), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "ns#abc"}}}}),
		"over 4 MB":            withWrites(bigs...),
	} {
		t.Run(name, func(t *testing.T) {
			f := &fakeAPI{}
			_, _, err := newTestStore(t, f).Commit(context.Background(), tx)
			if !errors.Is(err, idem.ErrInvalid) {
				t.Fatalf("Commit: %v, want ErrInvalid", err)
			}
			if f.calls() != 0 {
				t.Fatalf("%d calls, want none", f.calls())
			}
		})
	}
}

func TestCommitWritesReceiptFirst(t *testing.T) {
	f := &fakeAPI{tx: []func(*dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error){
		func(*dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
			return &dynamodb.TransactWriteItemsOutput{}, nil
		},
	}}
	// Same table, other item: allowed. Pointer and value forms both accepted.
	other := types.TransactWriteItem{Put: &types.Put{TableName: aws.String("receipts"), Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "ns#other"}}}}
	lw := ledgerWrite("a")
	rec, ok, err := newTestStore(t, f).Commit(context.Background(), withWrites(&lw, other))
	if err != nil || !ok || rec.Attempts != 1 || rec.Status != idem.StatusCompleted || string(rec.Result) != "ok" {
		t.Fatalf("Commit: %+v, %v, %v", rec, ok, err)
	}
	if f.calls() != 1 {
		t.Fatalf("%d calls, want 1", f.calls())
	}
	in := f.txs[0]
	if len(in.TransactItems) != 3 || in.ClientRequestToken != nil {
		t.Fatalf("input %+v", in)
	}
	u := in.TransactItems[0].Update
	if u == nil || aws.ToString(u.TableName) != "receipts" || u.ReturnValuesOnConditionCheckFailure != types.ReturnValuesOnConditionCheckFailureAllOld {
		t.Fatalf("receipt action %+v", in.TransactItems[0])
	}
	usesOnlyPlaceholders(t, aws.ToString(u.ConditionExpression), u.ExpressionAttributeNames, u.ExpressionAttributeValues)
	usesOnlyPlaceholders(t, aws.ToString(u.UpdateExpression), u.ExpressionAttributeNames, u.ExpressionAttributeValues)
	if !strings.HasPrefix(aws.ToString(u.ConditionExpression), "attribute_not_exists") {
		t.Fatalf("first commit condition %q, want the receipt absent", aws.ToString(u.ConditionExpression))
	}
	if in.TransactItems[1].Update != lw.Update {
		t.Fatal("user write not passed through as given")
	}
}

func canceled(reasons ...types.CancellationReason) error {
	return &types.TransactionCanceledException{Message: aws.String("Transaction cancelled"), CancellationReasons: reasons}
}

func reason(code string, item map[string]types.AttributeValue) types.CancellationReason {
	return types.CancellationReason{Code: aws.String(code), Item: item}
}

func reasonMsg(code, msg string) types.CancellationReason {
	return types.CancellationReason{Code: aws.String(code), Message: aws.String(msg)}
}

func TestCommitCancellationReasons(t *testing.T) {
	none := reason("None", nil)
	for name, tc := range map[string]struct {
		err       error
		wantRec   bool
		wantErr   error
		wantInMsg string
	}{
		"duplicate":                      {err: canceled(reason("ConditionalCheckFailed", item(t, completed())), none), wantRec: true},
		"duplicate, own write fails too": {err: canceled(reason("ConditionalCheckFailed", item(t, completed())), reason("ConditionalCheckFailed", nil)), wantRec: true},
		"concurrent commit":              {err: canceled(reason("TransactionConflict", nil), none), wantErr: idem.ErrInProgress},
		"conflict on a write":            {err: canceled(none, reason("TransactionConflict", nil)), wantErr: idem.ErrInProgress},
		"write condition":                {err: canceled(none, none, reason("ConditionalCheckFailed", nil)), wantErr: ErrWriteConditionFailed, wantInMsg: "write 1"},
		"throttled":                      {err: canceled(none, reason("ThrottlingError", nil)), wantErr: &types.TransactionCanceledException{}},
		"other error":                    {err: &types.ResourceNotFoundException{Message: aws.String("no table")}, wantErr: &types.ResourceNotFoundException{}},
		"receipt too large":              {err: canceled(reasonMsg("ValidationError", "Item size has exceeded the maximum allowed size"), none), wantErr: idem.ErrResultTooLarge},
		// The effect's mistakes are ErrInvalid, never a store outage.
		"write refused":     {err: canceled(none, reasonMsg("ValidationError", "The provided key element does not match the schema")), wantErr: idem.ErrInvalid, wantInMsg: "item 1"},
		"request malformed": {err: &smithy.GenericAPIError{Code: "ValidationException", Message: "Invalid UpdateExpression: Syntax error"}, wantErr: idem.ErrInvalid},
	} {
		t.Run(name, func(t *testing.T) {
			f := &fakeAPI{tx: []func(*dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error){
				func(*dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
					return nil, tc.err
				},
			}}
			lw := ledgerWrite("a")
			rec, ok, err := newTestStore(t, f).Commit(context.Background(), withWrites(lw, lw))
			if ok {
				t.Fatal("committed")
			}
			if tc.wantRec {
				if err != nil || rec.Status != idem.StatusCompleted || rec.Attempts != 3 || f.calls() != 1 {
					t.Fatalf("Commit: %+v, %v after %d calls; want the receipt in the way, no read", rec, err, f.calls())
				}
				return
			}
			switch want := tc.wantErr.(type) {
			case *types.TransactionCanceledException:
				if !errors.As(err, &want) || errors.Is(err, idem.ErrInProgress) || errors.Is(err, ErrWriteConditionFailed) {
					t.Fatalf("Commit: %v", err)
				}
			case *types.ResourceNotFoundException:
				if !errors.As(err, &want) {
					t.Fatalf("Commit: %v", err)
				}
			default:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Commit: %v, want %v", err, tc.wantErr)
				}
			}
			// Only the effect's own refused write is the effect failing; the
			// rest are the store's.
			if aborted := errors.Is(err, idem.ErrTxAborted); aborted != (tc.wantErr == ErrWriteConditionFailed) {
				t.Fatalf("Commit: %v wraps idem.ErrTxAborted: %v", err, aborted)
			}
			if !strings.Contains(err.Error(), tc.wantInMsg) {
				t.Fatalf("Commit: %q does not say %q", err, tc.wantInMsg)
			}
		})
	}
}

func TestCommitOverReplaceableRecordPinsAttempts(t *testing.T) {
	failed := completed()
	failed.Status = idem.StatusFailed
	failed.Attempts = 2
	f := &fakeAPI{tx: []func(*dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error){
		func(*dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
			return nil, canceled(reason("ConditionalCheckFailed", item(t, failed)))
		},
		func(*dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
			return &dynamodb.TransactWriteItemsOutput{}, nil
		},
	}}
	rec, ok, err := newTestStore(t, f).Commit(context.Background(), txn)
	if err != nil || !ok || rec.Attempts != 3 || len(f.txs) != 2 {
		t.Fatalf("Commit: %+v, %v, %v after %d calls; want attempt 3 on the second", rec, ok, err, len(f.txs))
	}
	u := f.txs[1].TransactItems[0].Update
	cond := aws.ToString(u.ConditionExpression)
	var pinned bool
	for k, v := range u.ExpressionAttributeValues {
		if n, ok := v.(*types.AttributeValueMemberN); ok && n.Value == "2" && strings.Contains(cond, k+")") {
			pinned = true
		}
	}
	if !pinned || strings.HasPrefix(cond, "attribute_not_exists") {
		t.Fatalf("second commit condition %q (values %v) does not pin attempts = 2", cond, u.ExpressionAttributeValues)
	}
}

func TestCommitWithoutItemReadsConsistently(t *testing.T) {
	f := &fakeAPI{
		tx: []func(*dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error){
			func(*dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
				return nil, canceled(reason("ConditionalCheckFailed", nil))
			},
		},
		get: []func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error){
			func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) {
				return &dynamodb.GetItemOutput{Item: item(t, completed())}, nil
			},
		},
	}
	rec, ok, err := newTestStore(t, f).Commit(context.Background(), txn)
	if err != nil || ok || rec.Status != idem.StatusCompleted {
		t.Fatalf("Commit: %+v, %v, %v", rec, ok, err)
	}
	if len(f.gets) != 1 || !aws.ToBool(f.gets[0].ConsistentRead) {
		t.Fatalf("reads %+v, want one consistent read", f.gets)
	}
}

func TestCommitGivesUpOnAChangingRecord(t *testing.T) {
	failed := completed()
	failed.Status = idem.StatusFailed
	f := &fakeAPI{tx: []func(*dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error){}}
	for range commitTries {
		f.tx = append(f.tx, func(*dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
			failed.Attempts++
			return nil, canceled(reason("ConditionalCheckFailed", item(t, failed)))
		})
	}
	_, _, err := newTestStore(t, f).Commit(context.Background(), txn)
	if !errors.Is(err, idem.ErrInProgress) || len(f.txs) != commitTries {
		t.Fatalf("Commit: %v after %d calls; want ErrInProgress after %d", err, len(f.txs), commitTries)
	}
}
