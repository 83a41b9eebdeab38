package dynamostore

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// optsRecorder is a fakeAPI that also applies each call's option functions
// to fresh Options, to see what the Store asks of the SDK.
type optsRecorder struct {
	*fakeAPI
	opts []dynamodb.Options
}

func (o *optsRecorder) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, fns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	var opts dynamodb.Options
	for _, fn := range fns {
		fn(&opts)
	}
	o.opts = append(o.opts, opts)
	return o.fakeAPI.UpdateItem(ctx, in)
}

// The Store retries on its own; the SDK's retryer, whose shared quota
// empties under a burst of throttling, must not be used for its requests.
func TestRequestsBypassTheSDKRetryer(t *testing.T) {
	rec := &optsRecorder{fakeAPI: &fakeAPI{update: []func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error){
		func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
			return &dynamodb.UpdateItemOutput{}, nil
		},
	}}}
	s, err := New(rec, "receipts")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(context.Background(), "ns#abc", "tok", idem.Completion{ExpiresAt: t0, Now: t0}); err != nil {
		t.Fatal(err)
	}
	if len(rec.opts) != 1 || rec.opts[0].RetryMaxAttempts != 1 {
		t.Fatalf("options %+v: want RetryMaxAttempts 1 (no SDK retries)", rec.opts)
	}
	if _, ok := rec.opts[0].Retryer.(aws.NopRetryer); !ok {
		t.Fatalf("retryer %T, want aws.NopRetryer", rec.opts[0].Retryer)
	}
}

// An acquire whose first request landed but whose response was lost (a 500
// after the write) is sent again; the retry's condition fails and DynamoDB
// returns the record the first one wrote, with this acquisition's lease,
// which the Guard takes as acquired.
func TestAcquireRetryFindsItsOwnWrite(t *testing.T) {
	mine := idem.Record{Key: acq.Key, Status: idem.StatusInProgress, Lease: acq.Lease, LeaseUntil: acq.LeaseUntil,
		ExpiresAt: acq.ExpiresAt, Attempts: 1, Fingerprint: acq.Fingerprint, UpdatedAt: acq.Now}
	f := &fakeAPI{update: []func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error){
		func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
			return nil, &types.InternalServerError{Message: aws.String("lost")}
		},
		func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) { return nil, ccf(item(t, mine)) },
	}}
	rec, acquired, err := newTestStore(t, f).Acquire(context.Background(), acq)
	if err != nil || acquired || rec.Lease != acq.Lease || rec.Status != idem.StatusInProgress || len(f.updates) != 2 {
		t.Fatalf("Acquire: %+v, %v, %v after %d calls; want the own record back", rec, acquired, err, len(f.updates))
	}
	if f.updates[0] != f.updates[1] {
		t.Fatal("the retry is not the same request")
	}
}

func TestResultRefusedForItsSize(t *testing.T) {
	tooBig := &smithy.GenericAPIError{Code: "ValidationException", Message: "Item size to update has exceeded the maximum allowed size"}
	f := &fakeAPI{update: []func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error){
		func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) { return nil, tooBig },
	}}
	s := newTestStore(t, f)
	err := s.Complete(context.Background(), "ns#abc", "tok", idem.Completion{Result: []byte("big"), ExpiresAt: t0, Now: t0})
	if !errors.Is(err, idem.ErrResultTooLarge) || len(f.updates) != 1 {
		t.Fatalf("Complete: %v after %d calls; want ErrResultTooLarge at once", err, len(f.updates))
	}
	// Without a result, the same refusal is not about the result.
	err = s.Complete(context.Background(), "ns#abc", "tok", idem.Completion{ExpiresAt: t0, Now: t0})
	if err == nil || errors.Is(err, idem.ErrResultTooLarge) {
		t.Fatalf("Complete without a result: %v", err)
	}
}

func TestCapabilities(t *testing.T) {
	s := newTestStore(t, &fakeAPI{})
	caps := s.Capabilities()
	if !caps.Transactions || caps.MaxResultSize < idem.DefaultMaxResultSize || caps.MaxResultSize > 400<<10-idem.MaxStorageKeyLen || caps.MaxKeySize != idem.MaxStorageKeyLen {
		t.Fatalf("capabilities %+v", caps)
	}
	c, err := New(&fakeAPI{}, "receipts", WithCompositeKey("PK", "SK", "IDEMPOTENCY"))
	if err != nil {
		t.Fatal(err)
	}
	cc := c.Capabilities()
	if cc.MaxKeySize != 1023 || cc.MaxResultSize != caps.MaxResultSize-len("SK")-len("IDEMPOTENCY")+(idem.MaxStorageKeyLen-1023) {
		t.Fatalf("composite capabilities %+v, simple %+v", cc, caps)
	}
}

func TestCompositeKey(t *testing.T) {
	f := &fakeAPI{update: []func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error){
		func(in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
			return &dynamodb.UpdateItemOutput{Attributes: map[string]types.AttributeValue{
				"PK": in.Key["PK"], "SK": in.Key["SK"], "status": &types.AttributeValueMemberS{Value: "IN_PROGRESS"},
				"attempts": &types.AttributeValueMemberN{Value: "1"},
			}}, nil
		},
	}}
	s, err := New(f, "single-table", WithCompositeKey("PK", "SK", "IDEMPOTENCY"))
	if err != nil {
		t.Fatal(err)
	}
	rec, ok, err := s.Acquire(context.Background(), acq)
	if err != nil || !ok || rec.Key != acq.Key || rec.Attempts != 1 {
		t.Fatalf("Acquire: %+v, %v, %v", rec, ok, err)
	}
	key := f.updates[0].Key
	if pk, sk := key["PK"].(*types.AttributeValueMemberS), key["SK"].(*types.AttributeValueMemberS); pk.Value != "IDEMPOTENCY" || sk.Value != acq.Key || len(key) != 2 {
		t.Fatalf("key %v", key)
	}
	if names := namesUsed(f.updates[0].ExpressionAttributeNames); !names["PK"] || names["pk"] {
		t.Fatalf("condition names %v: want the composite partition key PK", names)
	}
	for _, bad := range []Option{
		WithCompositeKey("", "SK", "v"), WithCompositeKey("PK", "", "v"), WithCompositeKey("PK", "SK", ""),
		WithCompositeKey("PK", "status", "v"), WithCompositeKey("PK", "SK", string(make([]byte, MaxPartitionValueLen+1))),
	} {
		if _, err := New(f, "receipts", bad); !errors.Is(err, idem.ErrInvalid) {
			t.Errorf("bad composite key: %v, want ErrInvalid", err)
		}
	}
}

// The expressions are built once per shape, not per request.
func TestExpressionsAreReused(t *testing.T) {
	ok := func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
		return &dynamodb.UpdateItemOutput{}, nil
	}
	f := &fakeAPI{update: []func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error){ok}}
	s := newTestStore(t, f)
	for range 2 {
		if err := s.Complete(context.Background(), "ns#abc", "tok", idem.Completion{ExpiresAt: t0, Now: t0}); err != nil {
			t.Fatal(err)
		}
	}
	a, b := f.updates[0], f.updates[1]
	if a.UpdateExpression != b.UpdateExpression || a.ConditionExpression != b.ConditionExpression {
		t.Fatal("expression strings rebuilt for the second request")
	}
	usesOnlyPlaceholders(t, aws.ToString(b.UpdateExpression), b.ExpressionAttributeNames, b.ExpressionAttributeValues)
	usesOnlyPlaceholders(t, aws.ToString(b.ConditionExpression), b.ExpressionAttributeNames, b.ExpressionAttributeValues)
}
