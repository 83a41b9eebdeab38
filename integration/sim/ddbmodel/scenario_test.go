package ddbmodel

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
)

// scenario drives the real dynamostore.Store through what it meets in
// production, against any server: acquire, complete, release, commit and
// get; lost acknowledgements (the same request sent twice); lease
// takeovers; expired and FAILED records; results at the item size limit
// and one byte over; transactional writes whose own condition fails; a
// write on the receipt's own item; TTL's conditional delete. The
// differential test runs it on DynamoDB Local and replays its requests on
// the model; the unit test runs it on the model.
type scenario struct {
	t      *testing.T
	api    Client
	store  *dynamostore.Store
	table  string
	ledger string
	// key is the primary key of the record stored under a storage key.
	key func(k string) map[string]types.AttributeValue
	now time.Time
}

func newScenario(t *testing.T, api Client, table, ledger string, composite bool) *scenario {
	var opts []dynamostore.Option
	key := func(k string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: k}}
	}
	if composite {
		opts = append(opts, dynamostore.WithCompositeKey("PK", "SK", "IDEMPOTENCY"))
		key = func(k string) map[string]types.AttributeValue {
			return map[string]types.AttributeValue{
				"PK": &types.AttributeValueMemberS{Value: "IDEMPOTENCY"},
				"SK": &types.AttributeValueMemberS{Value: k},
			}
		}
	}
	store, err := dynamostore.New(api, table, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return &scenario{t: t, api: api, store: store, table: table, ledger: ledger, key: key, now: time.Unix(1_700_000_000, 0)}
}

func (s *scenario) acquisition(key, lease string, at time.Time, leaseFor, keep time.Duration) idem.Acquisition {
	return idem.Acquisition{Key: key, Lease: lease, LeaseUntil: at.Add(leaseFor), ExpiresAt: at.Add(keep), Now: at, Fingerprint: "fp-" + key}
}

func (s *scenario) acquire(a idem.Acquisition, wantAcquired bool, wantStatus idem.Status) idem.Record {
	s.t.Helper()
	rec, ok, err := s.store.Acquire(s.ctx(), a)
	if err != nil || ok != wantAcquired || rec.Status != wantStatus {
		s.t.Fatalf("Acquire %s (lease %s): %+v, acquired %v, %v; want acquired %v, status %s", a.Key, a.Lease, rec, ok, err, wantAcquired, wantStatus)
	}
	return rec
}

func (s *scenario) complete(key, lease string, result []byte, at time.Time, want error) {
	s.t.Helper()
	err := s.store.Complete(s.ctx(), key, lease, idem.Completion{Result: result, ExpiresAt: at.Add(time.Hour), Now: at})
	if !errors.Is(err, want) {
		s.t.Fatalf("Complete %s (lease %s, %d bytes): %v, want %v", key, lease, len(result), err, want)
	}
}

func (s *scenario) commit(tx idem.Transaction, wantCommitted bool, want error) idem.Record {
	s.t.Helper()
	rec, ok, err := s.store.Commit(s.ctx(), tx)
	if !errors.Is(err, want) || ok != wantCommitted {
		s.t.Fatalf("Commit %s (token %s): %+v, committed %v, %v; want committed %v, %v", tx.Key, tx.Token, rec, ok, err, wantCommitted, want)
	}
	return rec
}

func (s *scenario) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	s.t.Cleanup(cancel)
	return ctx
}

// increment is a transactional write: ADD n 1 on a ledger item.
func (s *scenario) increment(id string) types.TransactWriteItem {
	return ledgerIncrement(s.ledger)(id).(types.TransactWriteItem)
}

// sizeOf is the size of the item stored under a storage key.
func (s *scenario) sizeOf(key string) int {
	s.t.Helper()
	out, err := s.api.GetItem(s.ctx(), &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: s.key(key), ConsistentRead: aws.Bool(true)})
	if err != nil || out.Item == nil {
		s.t.Fatalf("GetItem %s: %v, %v", key, out, err)
	}
	it, msg := ingestItem(out.Item)
	if msg != "" {
		s.t.Fatal(msg)
	}
	return itemSize(it)
}

func (s *scenario) run() {
	t, now := s.t, s.now
	min, hour := time.Minute, time.Hour

	// A new key, then the same request again (its reply was lost): the
	// store recognises its own lease in the record returned.
	a := s.acquisition("k1", "L1", now, min, hour)
	s.acquire(a, true, idem.StatusInProgress)
	s.acquire(a, false, idem.StatusInProgress)
	s.complete("k1", "L1", []byte("r1"), now, nil)
	s.complete("k1", "L1", []byte("r1"), now, nil) // lost acknowledgement
	s.acquire(s.acquisition("k1", "L1b", now, min, hour), false, idem.StatusCompleted)
	if rec, found, err := s.store.Get(s.ctx(), "k1"); err != nil || !found || string(rec.Result) != "r1" {
		t.Fatalf("Get k1: %+v, %v, %v", rec, found, err)
	}
	if _, found, err := s.store.Get(s.ctx(), "absent"); err != nil || found {
		t.Fatalf("Get absent: %v, %v", found, err)
	}

	// In progress, then released (FAILED), released again, taken again.
	s.acquire(s.acquisition("k2", "L2", now, min, hour), true, idem.StatusInProgress)
	s.acquire(s.acquisition("k2", "L2x", now, min, hour), false, idem.StatusInProgress)
	for range 2 {
		if err := s.store.Release(s.ctx(), "k2", "L2", idem.Released{Status: idem.StatusFailed, Reason: "boom", Now: now}); err != nil {
			t.Fatalf("Release k2: %v", err)
		}
	}
	s.acquire(s.acquisition("k2", "L2b", now.Add(time.Second), min, hour), true, idem.StatusInProgress)
	// L2's release sent again after L2b took the FAILED record it left: its
	// own (the record still names L2 as released). L2x never released.
	if err := s.store.Release(s.ctx(), "k2", "L2", idem.Released{Status: idem.StatusFailed, Reason: "", Now: now}); err != nil {
		t.Fatalf("Release k2 sent again after a takeover: %v", err)
	}
	if err := s.store.Release(s.ctx(), "k2", "L2x", idem.Released{Status: idem.StatusFailed, Reason: "", Now: now}); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("Release k2 with a lost lease: %v", err)
	}

	// A lease that ran out is taken over; its holder's writes are fenced.
	s.acquire(s.acquisition("k3", "L3", now, time.Second, hour), true, idem.StatusInProgress)
	s.acquire(s.acquisition("k3", "L3b", now.Add(2*time.Second), min, hour), true, idem.StatusInProgress)
	s.complete("k3", "L3", []byte("late"), now.Add(3*time.Second), idem.ErrLeaseLost)

	// An expired receipt TTL has not deleted yet runs again; then TTL's
	// conditional delete.
	s.acquire(s.acquisition("k4", "L4", now, min, time.Second), true, idem.StatusInProgress)
	s.complete("k4", "L4", nil, now, nil)
	later := now.Add(2 * hour)
	s.acquire(s.acquisition("k4", "L4b", later, min, time.Second), true, idem.StatusInProgress)
	s.ttlDelete("k4", later.Add(hour))
	s.ttlDelete("k1", now) // not expired: the delete's condition fails

	// Results at the size limit: the item exactly at 400 KB is kept, one
	// byte more is refused (ErrResultTooLarge) and nothing is written.
	s.acquire(s.acquisition("k5", "L5", now, min, hour), true, idem.StatusInProgress)
	s.complete("k5", "L5", []byte("x"), now, nil)
	n := DefaultItemLimit - s.sizeOf("k5") + 1
	s.complete("k5", "L5", bytes.Repeat([]byte("r"), n), now, nil)
	s.complete("k5", "L5", bytes.Repeat([]byte("r"), n+1), now, idem.ErrResultTooLarge)
	s.complete("k5", "L5", bytes.Repeat([]byte("r"), s.store.Capabilities().MaxResultSize), now, nil)

	s.transactions()
}

func (s *scenario) ttlDelete(key string, at time.Time) {
	x, err := expression.NewBuilder().WithCondition(expression.Name("expiresAt").LessThan(expression.Value(at.Unix()))).Build()
	if err != nil {
		s.t.Fatal(err)
	}
	_, err = s.api.DeleteItem(s.ctx(), &dynamodb.DeleteItemInput{
		TableName: aws.String(s.table), Key: s.key(key),
		ConditionExpression: x.Condition(), ExpressionAttributeNames: x.Names(), ExpressionAttributeValues: x.Values(),
		ReturnValues: types.ReturnValueAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		s.t.Fatalf("TTL delete %s: %v", key, err)
	}
}

func (s *scenario) transactions() {
	t, now, hour := s.t, s.now, time.Hour
	tx := func(key, token string, result []byte, writes ...any) idem.Transaction {
		return idem.Transaction{Key: key, Token: token, ExpiresAt: now.Add(hour), Now: now, Result: result, Fingerprint: "fp", Writes: writes}
	}
	// A commit, its lost acknowledgement, a duplicate.
	s.commit(tx("t1", "T1", []byte("ok"), s.increment("t1")), true, nil)
	s.commit(tx("t1", "T1", []byte("ok"), s.increment("t1")), true, nil)
	s.commit(tx("t1", "T1b", []byte("again"), s.increment("t1")), false, nil)

	// The effect's own condition fails: everything is cancelled.
	check, err := expression.NewBuilder().WithCondition(expression.Name("n").AttributeExists()).Build()
	if err != nil {
		t.Fatal(err)
	}
	failing := types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName: aws.String(s.ledger), Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "absent"}},
		ConditionExpression: check.Condition(), ExpressionAttributeNames: check.Names(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}
	s.commit(tx("t2", "T2", nil, s.increment("t2"), failing), false, dynamostore.ErrWriteConditionFailed)

	// A write on another item of the receipt table is fine; one on the
	// receipt's own item is refused before any request.
	other, err := expression.NewBuilder().WithCondition(expression.Name("status").AttributeNotExists()).Build()
	if err != nil {
		t.Fatal(err)
	}
	s.commit(tx("t3", "T3", nil, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName: aws.String(s.table), Key: s.key("t3-other"),
		ConditionExpression: other.Condition(), ExpressionAttributeNames: other.Names(),
	}}), true, nil)
	s.commit(tx("t4", "T4", nil, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName: aws.String(s.table), Key: s.key("t4"),
		ConditionExpression: other.Condition(), ExpressionAttributeNames: other.Names(),
	}}), false, idem.ErrInvalid)

	// A FAILED record and an expired one are replaced, attempts pinned.
	s.acquire(s.acquisition("t5", "L", now, time.Minute, hour), true, idem.StatusInProgress)
	if err := s.store.Release(s.ctx(), "t5", "L", idem.Released{Status: idem.StatusFailed, Reason: "boom", Now: now}); err != nil {
		t.Fatal(err)
	}
	if rec := s.commit(tx("t5", "T5", []byte("ok")), true, nil); rec.Attempts != 2 {
		t.Fatalf("commit over FAILED: attempts %d, want 2", rec.Attempts)
	}
	s.acquire(s.acquisition("t6", "L", now.Add(-2*hour), time.Minute, time.Second), true, idem.StatusInProgress)
	s.commit(tx("t6", "T6", nil, s.increment("t6")), true, nil)
	s.acquire(s.acquisition("t7", "L", now, time.Minute, hour), true, idem.StatusInProgress)
	s.commit(tx("t7", "T7", nil), false, nil) // a live lease holds it

	// Receipts at the size limit.
	s.commit(tx("tx-big-1", "T", []byte("x")), true, nil)
	n := DefaultItemLimit - s.sizeOf("tx-big-1") + 1
	s.commit(tx("tx-big-2", "T", bytes.Repeat([]byte("r"), n)), true, nil)
	s.commit(tx("tx-big-3", "T", bytes.Repeat([]byte("r"), n+1), s.increment("big")), false, idem.ErrResultTooLarge)
	s.commit(tx("tx-big-4", "T", bytes.Repeat([]byte("r"), 500<<10)), false, idem.ErrResultTooLarge)
}

// The scenario on the model, with the conformance of its replies to the
// Store checked by the scenario itself.
func TestScenario(t *testing.T) {
	for _, composite := range []bool{false, true} {
		srv := New()
		mustCreate(t, srv, "receipts", "pk", "")
		mustCreate(t, srv, "single", "PK", "SK")
		mustCreate(t, srv, "ledger", "id", "")
		table := "receipts"
		if composite {
			table = "single"
		}
		var calls []Call
		srv.SetRecorder(func(c Call) { calls = append(calls, c) })
		newScenario(t, srv, table, "ledger", composite).run()
		// A replay on a fresh model gives the same replies.
		again := New()
		mustCreate(t, again, "receipts", "pk", "")
		mustCreate(t, again, "single", "PK", "SK")
		mustCreate(t, again, "ledger", "id", "")
		for _, m := range Replay(context.Background(), calls, again) {
			t.Error(m)
		}
		t.Logf("composite=%v: %d requests", composite, len(calls))
	}
}
