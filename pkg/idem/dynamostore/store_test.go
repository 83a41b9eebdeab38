package dynamostore

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// fakeAPI answers each call with the next scripted function and records the
// inputs.
type fakeAPI struct {
	update []func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error)
	get    []func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error)
	tx     []func(*dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error)

	updates []*dynamodb.UpdateItemInput
	gets    []*dynamodb.GetItemInput
	txs     []*dynamodb.TransactWriteItemsInput
}

func (f *fakeAPI) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	f.updates = append(f.updates, in)
	if len(f.update) == 0 {
		return nil, errors.New("fake: unexpected UpdateItem")
	}
	fn := f.update[0]
	if len(f.update) > 1 {
		f.update = f.update[1:]
	}
	return fn(in)
}

func (f *fakeAPI) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	f.gets = append(f.gets, in)
	if len(f.get) == 0 {
		return nil, errors.New("fake: unexpected GetItem")
	}
	fn := f.get[0]
	f.get = f.get[1:]
	return fn(in)
}

func (f *fakeAPI) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	f.txs = append(f.txs, in)
	if len(f.tx) == 0 {
		return nil, errors.New("fake: unexpected TransactWriteItems")
	}
	fn := f.tx[0]
	f.tx = f.tx[1:]
	return fn(in)
}

func (f *fakeAPI) calls() int { return len(f.updates) + len(f.gets) + len(f.txs) }

var (
	t0  = time.UnixMilli(1_750_000_000_123)
	acq = idem.Acquisition{
		Key:         "ns#abc",
		Lease:       "tok",
		LeaseUntil:  t0.Add(time.Minute),
		ExpiresAt:   t0.Add(time.Hour),
		Fingerprint: "fp",
		Now:         t0,
	}
)

func newTestStore(t *testing.T, f *fakeAPI) *Store {
	t.Helper()
	s, err := New(f, "receipts")
	if err != nil {
		t.Fatal(err)
	}
	s.backoff = func(int) time.Duration { return time.Millisecond }
	return s
}

// item encodes rec as the store writes it.
func item(t *testing.T, rec idem.Record) map[string]types.AttributeValue {
	t.Helper()
	m := map[string]any{
		"pk":          rec.Key,
		"status":      string(rec.Status),
		"lease":       rec.Lease,
		"leaseUntil":  rec.LeaseUntil.UnixMilli(),
		"expiresAt":   rec.ExpiresAt.Unix(),
		"attempts":    rec.Attempts,
		"fingerprint": rec.Fingerprint,
		"updatedAt":   rec.UpdatedAt.UnixMilli(),
	}
	if rec.Result != nil {
		m["result"] = rec.Result
	}
	av, err := attributevalue.MarshalMap(m)
	if err != nil {
		t.Fatal(err)
	}
	return av
}

func completed() idem.Record {
	return idem.Record{
		Key: "ns#abc", Status: idem.StatusCompleted, Lease: "old", LeaseUntil: t0.Add(-time.Minute),
		ExpiresAt: t0.Add(time.Hour), Attempts: 3, Fingerprint: "fp", Result: []byte("r"), UpdatedAt: t0,
	}
}

func ccf(item map[string]types.AttributeValue) error {
	return &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed"), Item: item}
}

// usesOnlyPlaceholders checks that an expression refers to attributes and
// values only through #names and :values it defines, which is what the
// expression builder guarantees and string concatenation would not.
func usesOnlyPlaceholders(t *testing.T, expr string, names map[string]string, values map[string]types.AttributeValue) {
	t.Helper()
	for _, tok := range strings.FieldsFunc(expr, func(r rune) bool { return strings.ContainsRune(" \n(),=<>", r) }) {
		switch {
		case strings.HasPrefix(tok, "#"):
			if _, ok := names[tok]; !ok {
				t.Errorf("%q: undefined name %s", expr, tok)
			}
		case strings.HasPrefix(tok, ":"):
			if _, ok := values[tok]; !ok {
				t.Errorf("%q: undefined value %s", expr, tok)
			}
		case tok == "SET" || tok == "ADD" || tok == "REMOVE" || tok == "AND" || tok == "OR" ||
			tok == "attribute_not_exists" || tok == "attribute_exists" || tok == "if_not_exists" || tok == "<" || tok == "+":
		default:
			t.Errorf("%q: literal token %q", expr, tok)
		}
	}
}

func namesUsed(names map[string]string) map[string]bool {
	used := map[string]bool{}
	for _, n := range names {
		used[n] = true
	}
	return used
}

func TestAcquireWritesOneConditionalUpdate(t *testing.T) {
	f := &fakeAPI{update: []func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error){
		func(in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
			return &dynamodb.UpdateItemOutput{Attributes: item(t, idem.Record{
				Key: acq.Key, Status: idem.StatusInProgress, Lease: acq.Lease, LeaseUntil: acq.LeaseUntil,
				ExpiresAt: acq.ExpiresAt, Attempts: 4, Fingerprint: acq.Fingerprint, UpdatedAt: acq.Now,
			})}, nil
		},
	}}
	rec, ok, err := newTestStore(t, f).Acquire(context.Background(), acq)
	if err != nil || !ok {
		t.Fatalf("Acquire: %v, %v", ok, err)
	}
	if rec.Attempts != 4 || rec.Lease != "tok" || !rec.LeaseUntil.Equal(acq.LeaseUntil) || rec.ExpiresAt.Unix() != acq.ExpiresAt.Unix() {
		t.Fatalf("record %+v", rec)
	}
	if f.calls() != 1 {
		t.Fatalf("%d calls, want 1", f.calls())
	}
	in := f.updates[0]
	if aws.ToString(in.TableName) != "receipts" || in.ReturnValues != types.ReturnValueAllNew ||
		in.ReturnValuesOnConditionCheckFailure != types.ReturnValuesOnConditionCheckFailureAllOld {
		t.Fatalf("input %+v", in)
	}
	if pk := in.Key["pk"].(*types.AttributeValueMemberS).Value; pk != acq.Key {
		t.Fatalf("key %q", pk)
	}
	usesOnlyPlaceholders(t, aws.ToString(in.ConditionExpression), in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	usesOnlyPlaceholders(t, aws.ToString(in.UpdateExpression), in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	used := namesUsed(in.ExpressionAttributeNames)
	// lastError is kept: the last error of the attempt taken over, with
	// prevStatus, its status.
	for _, n := range []string{"pk", "expiresAt", "status", "leaseUntil", "lease", "attempts", "fingerprint", "updatedAt", "result", "resultOmitted", "prevStatus"} {
		if !used[n] {
			t.Errorf("attribute %s not in the expressions", n)
		}
	}
	cond := aws.ToString(in.ConditionExpression)
	if !strings.Contains(cond, "attribute_not_exists") || strings.Count(cond, " OR ") != 4 {
		t.Errorf("condition %q", cond)
	}
	for _, want := range []string{"SET", "ADD", "REMOVE"} {
		if !strings.Contains(aws.ToString(in.UpdateExpression), want) {
			t.Errorf("update %q lacks %s", aws.ToString(in.UpdateExpression), want)
		}
	}
	// The time values are in the documented units.
	var nums []string
	for _, v := range in.ExpressionAttributeValues {
		if n, ok := v.(*types.AttributeValueMemberN); ok {
			nums = append(nums, n.Value)
		}
	}
	for _, want := range []int64{acq.Now.Unix(), acq.Now.UnixMilli(), acq.LeaseUntil.UnixMilli(), acq.ExpiresAt.Unix()} {
		if !slices.Contains(nums, strconv.FormatInt(want, 10)) {
			t.Errorf("value %d not among %v", want, nums)
		}
	}
}

func TestAcquireConflictDecodesOldItemWithoutRead(t *testing.T) {
	f := &fakeAPI{update: []func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error){
		func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
			return nil, ccf(item(t, completed()))
		},
	}}
	rec, ok, err := newTestStore(t, f).Acquire(context.Background(), acq)
	if err != nil || ok {
		t.Fatalf("Acquire: %v, %v; want a conflict", ok, err)
	}
	if rec.Status != idem.StatusCompleted || string(rec.Result) != "r" || rec.Attempts != 3 || rec.Lease != "old" {
		t.Fatalf("record %+v", rec)
	}
	if len(f.gets) != 0 || f.calls() != 1 {
		t.Fatalf("%d calls (%d reads), want the one write", f.calls(), len(f.gets))
	}
}

func TestAcquireConflictWithoutItemReadsConsistently(t *testing.T) {
	f := &fakeAPI{
		update: []func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error){
			func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) { return nil, ccf(nil) },
		},
		get: []func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error){
			func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) {
				return &dynamodb.GetItemOutput{Item: item(t, completed())}, nil
			},
		},
	}
	rec, ok, err := newTestStore(t, f).Acquire(context.Background(), acq)
	if err != nil || ok || rec.Status != idem.StatusCompleted {
		t.Fatalf("Acquire: %+v, %v, %v", rec, ok, err)
	}
	if len(f.gets) != 1 || !aws.ToBool(f.gets[0].ConsistentRead) {
		t.Fatalf("reads %+v, want one consistent read", f.gets)
	}
}

func TestAcquireRetriesWhenRecordVanished(t *testing.T) {
	acquired := &dynamodb.UpdateItemOutput{Attributes: item(t, idem.Record{Key: acq.Key, Status: idem.StatusInProgress, Attempts: 1})}
	for name, read := range map[string]*dynamodb.GetItemOutput{
		"deleted": {},
		"expired": {Item: item(t, idem.Record{Key: acq.Key, Status: idem.StatusCompleted, ExpiresAt: t0.Add(-time.Hour)})},
		"failed":  {Item: item(t, idem.Record{Key: acq.Key, Status: idem.StatusFailed, ExpiresAt: t0.Add(time.Hour)})},
	} {
		t.Run(name, func(t *testing.T) {
			f := &fakeAPI{
				update: []func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error){
					func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) { return nil, ccf(nil) },
					func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) { return acquired, nil },
				},
				get: []func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error){
					func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) { return read, nil },
				},
			}
			_, ok, err := newTestStore(t, f).Acquire(context.Background(), acq)
			if err != nil || !ok || len(f.updates) != 2 {
				t.Fatalf("Acquire: %v, %v after %d writes; want acquired on the retry", ok, err, len(f.updates))
			}
		})
	}
	t.Run("gives up after one retry", func(t *testing.T) {
		f := &fakeAPI{
			update: []func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error){
				func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) { return nil, ccf(nil) },
			},
			get: []func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error){
				func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) { return &dynamodb.GetItemOutput{}, nil },
				func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) { return &dynamodb.GetItemOutput{}, nil },
			},
		}
		_, _, err := newTestStore(t, f).Acquire(context.Background(), acq)
		if !errors.Is(err, idem.ErrInProgress) || len(f.updates) != 2 {
			t.Fatalf("Acquire: %v after %d writes; want ErrInProgress after 2", err, len(f.updates))
		}
	})
}

func TestAcquireErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		err  error
		want error
	}{
		"transaction in flight": {&types.TransactionConflictException{Message: aws.String("tx")}, idem.ErrInProgress},
		"other":                 {&types.ResourceNotFoundException{Message: aws.String("no table")}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			f := &fakeAPI{update: []func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error){
				func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) { return nil, tc.err },
			}}
			_, ok, err := newTestStore(t, f).Acquire(context.Background(), acq)
			if ok || err == nil || !errors.Is(err, tc.err) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("Acquire: %v, %v", ok, err)
			}
		})
	}
}

func TestCompleteIsFenced(t *testing.T) {
	f := &fakeAPI{update: []func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error){
		func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
			return &dynamodb.UpdateItemOutput{}, nil
		},
	}}
	err := newTestStore(t, f).Complete(context.Background(), "ns#abc", "tok", idem.Completion{Result: []byte("r"), ExpiresAt: t0, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	in := f.updates[0]
	usesOnlyPlaceholders(t, aws.ToString(in.ConditionExpression), in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	usesOnlyPlaceholders(t, aws.ToString(in.UpdateExpression), in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	var lease bool
	for _, v := range in.ExpressionAttributeValues {
		if s, ok := v.(*types.AttributeValueMemberS); ok && s.Value == "tok" {
			lease = true
		}
	}
	if !lease || !namesUsed(in.ExpressionAttributeNames)["lease"] {
		t.Fatalf("condition %q does not check the lease", aws.ToString(in.ConditionExpression))
	}
}

func TestCompleteRetriesTransientErrors(t *testing.T) {
	throttled := func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
		return nil, &types.ProvisionedThroughputExceededException{Message: aws.String("slow down")}
	}
	t.Run("until success", func(t *testing.T) {
		f := &fakeAPI{update: []func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error){
			throttled,
			func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
				return nil, &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: nil}, Err: &types.InternalServerError{}}
			},
			func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
				return &dynamodb.UpdateItemOutput{}, nil
			},
		}}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := newTestStore(t, f).Complete(ctx, "ns#abc", "tok", idem.Completion{}); err != nil || len(f.updates) != 3 {
			t.Fatalf("Complete: %v after %d calls; want success on the third", err, len(f.updates))
		}
	})
	t.Run("until the deadline", func(t *testing.T) {
		f := &fakeAPI{update: []func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error){throttled}}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		err := newTestStore(t, f).Complete(ctx, "ns#abc", "tok", idem.Completion{})
		var pte *types.ProvisionedThroughputExceededException
		if !errors.As(err, &pte) || !errors.Is(err, context.DeadlineExceeded) || len(f.updates) < 3 {
			t.Fatalf("Complete: %v after %d calls; want the throttling error and the deadline", err, len(f.updates))
		}
	})
	t.Run("not a lost lease", func(t *testing.T) {
		f := &fakeAPI{update: []func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error){
			throttled,
			func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) { return nil, ccf(nil) },
		}}
		err := newTestStore(t, f).Complete(context.Background(), "ns#abc", "tok", idem.Completion{})
		if !errors.Is(err, idem.ErrLeaseLost) || len(f.updates) != 2 {
			t.Fatalf("Complete: %v after %d calls; want ErrLeaseLost", err, len(f.updates))
		}
	})
	t.Run("not a permanent error", func(t *testing.T) {
		f := &fakeAPI{update: []func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error){
			func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
				return nil, &types.ResourceNotFoundException{Message: aws.String("no table")}
			},
		}}
		err := newTestStore(t, f).Complete(context.Background(), "ns#abc", "tok", idem.Completion{})
		if err == nil || errors.Is(err, idem.ErrLeaseLost) || len(f.updates) != 1 {
			t.Fatalf("Complete: %v after %d calls; want the error at once", err, len(f.updates))
		}
	})
}

func TestReleaseIsFencedAndRetriedBriefly(t *testing.T) {
	throttled := func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
		return nil, &types.ProvisionedThroughputExceededException{Message: aws.String("slow down")}
	}
	f := &fakeAPI{update: []func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error){
		throttled,
		func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) { return nil, ccf(nil) },
	}}
	s := newTestStore(t, f)
	if err := s.Release(context.Background(), "ns#abc", "tok", idem.Released{Status: idem.StatusFailed, Reason: "boom", Now: t0}); !errors.Is(err, idem.ErrLeaseLost) || len(f.updates) != 2 {
		t.Fatalf("Release: %v after %d calls; want ErrLeaseLost on the retry", err, len(f.updates))
	}
	f = &fakeAPI{update: []func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error){throttled}}
	if err := newTestStore(t, f).Release(context.Background(), "ns#abc", "tok", idem.Released{Status: idem.StatusFailed, Reason: "boom", Now: t0}); err == nil || len(f.updates) != releaseTries {
		t.Fatalf("Release: %v after %d calls; want to give up after %d", err, len(f.updates), releaseTries)
	}
}

func TestTransient(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&types.ProvisionedThroughputExceededException{}, true},
		{&types.RequestLimitExceeded{}, true},
		{&types.InternalServerError{}, true},
		{&types.ThrottlingException{}, true},
		{&types.TransactionConflictException{}, true},
		{&types.ConditionalCheckFailedException{}, false},
		{&types.ResourceNotFoundException{}, false},
		{context.DeadlineExceeded, false},
		{context.Canceled, false},
		{errors.New("plain"), false},
	} {
		if got := transient(tc.err); got != tc.want {
			t.Errorf("transient(%T) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestNewValidates(t *testing.T) {
	if _, err := New(nil, "t"); !errors.Is(err, idem.ErrInvalid) {
		t.Errorf("nil client: %v", err)
	}
	if _, err := New(&fakeAPI{}, ""); !errors.Is(err, idem.ErrInvalid) {
		t.Errorf("empty table: %v", err)
	}
	bad := DefaultSchema
	bad.Lease = bad.Status
	if _, err := New(&fakeAPI{}, "receipts", WithSchema(bad)); !errors.Is(err, idem.ErrInvalid) {
		t.Errorf("duplicate attribute names: %v", err)
	}
	other := DefaultSchema
	other.PartitionKey = "id"
	s, err := New(&fakeAPI{}, "receipts", WithSchema(other))
	if err != nil || s.key("k")["id"] == nil {
		t.Errorf("custom schema: %v", err)
	}
}

func TestDecodeRoundTrip(t *testing.T) {
	s := newTestStore(t, &fakeAPI{})
	want := completed()
	want.LastError = "x"
	want.ResultOmitted = true
	av := item(t, want)
	av["lastError"] = &types.AttributeValueMemberS{Value: "x"}
	av["resultOmitted"] = &types.AttributeValueMemberBOOL{Value: true}
	got, err := s.decode(av)
	if err != nil {
		t.Fatal(err)
	}
	want.ExpiresAt = time.Unix(want.ExpiresAt.Unix(), 0)
	if got.Key != want.Key || got.Status != want.Status || got.Attempts != want.Attempts || string(got.Result) != "r" ||
		!got.ResultOmitted || got.LastError != "x" || !got.ExpiresAt.Equal(want.ExpiresAt) ||
		!got.LeaseUntil.Equal(want.LeaseUntil) || !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Fatalf("decode = %+v\nwant     %+v", got, want)
	}
	if _, err := s.decode(map[string]types.AttributeValue{"attempts": &types.AttributeValueMemberS{Value: "x"}}); err == nil {
		t.Fatal("decode of a malformed item: no error")
	}
}

// TestOptionsInAnyOrder: WithSchema after WithCompositeKey keeps the
// composite key (it used to put the schema's partition key back, and every
// request failed against the table).
func TestOptionsInAnyOrder(t *testing.T) {
	composite := WithCompositeKey("PK", "SK", "IDEMPOTENCY")
	for _, opts := range [][]Option{{composite, WithSchema(DefaultSchema)}, {WithSchema(DefaultSchema), composite}} {
		s, err := New(&fakeAPI{}, "receipts", opts...)
		if err != nil {
			t.Fatal(err)
		}
		if k := s.key("ns#k"); len(k) != 2 || k["PK"] == nil || k["SK"] == nil {
			t.Errorf("key %v, want PK and SK", k)
		}
	}
}

// TestNewRefusesWhatDynamoDBRefuses: names and table names DynamoDB would
// refuse on every request are ErrInvalid at New.
func TestNewRefusesWhatDynamoDBRefuses(t *testing.T) {
	long := strings.Repeat("k", 256)
	for name, opts := range map[string][]Option{
		"partition key name over 255 bytes": {WithSchema(func() Names { n := DefaultSchema; n.PartitionKey = long; return n }())},
		"sort key name over 255 bytes":      {WithCompositeKey("PK", long, "IDEMPOTENCY")},
		"composite key name over 255 bytes": {WithCompositeKey(long, "SK", "IDEMPOTENCY")},
	} {
		if _, err := New(&fakeAPI{}, "receipts", opts...); !errors.Is(err, idem.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	for _, table := range []string{"", "ab", "has space", "naïve", strings.Repeat("t", 256)} {
		if _, err := New(&fakeAPI{}, table); !errors.Is(err, idem.ErrInvalid) {
			t.Errorf("table %q: %v, want ErrInvalid", table, err)
		}
	}
	for _, table := range []string{"abc", "My_Table-1.v2", "arn:aws:dynamodb:eu-west-1:123456789012:table/receipts"} {
		if _, err := New(&fakeAPI{}, table); err != nil {
			t.Errorf("table %q: %v", table, err)
		}
	}
}
