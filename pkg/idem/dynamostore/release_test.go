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

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// TestReleaseSentAgainAfterTakeover: a release that landed but whose
// response was lost is sent again; meanwhile another attempt took the
// FAILED record it left. The fence fails, and the record DynamoDB returns
// (ALL_OLD) still names this lease as the last one released: the release
// is the caller's own, done. Anything else stays lease lost.
func TestReleaseSentAgainAfterTakeover(t *testing.T) {
	taken := func(released string) map[string]types.AttributeValue {
		it := item(t, idem.Record{Key: acq.Key, Status: idem.StatusInProgress, Lease: "theirs", LeaseUntil: t0.Add(time.Minute), Attempts: 2})
		if released != "" {
			it["released"] = str(released)
		}
		return it
	}
	for _, tc := range []struct {
		name      string
		old       map[string]types.AttributeValue
		leaseLost bool
	}{
		{"taken after our release", taken("tok"), false},
		{"taken after another release", taken("other"), true},
		{"taken from a lapsed lease or an expired receipt", taken(""), true},
		{"no record", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeAPI{update: []func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error){
				func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
					return nil, &types.InternalServerError{Message: aws.String("landed, response lost")}
				},
				func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) { return nil, ccf(tc.old) },
			}}
			err := newTestStore(t, f).Release(context.Background(), acq.Key, "tok", idem.Released{Status: idem.StatusFailed, Reason: "boom", Now: t0})
			if len(f.updates) != 2 || f.updates[0] != f.updates[1] {
				t.Fatalf("%d requests; want the same one sent twice", len(f.updates))
			}
			if got := f.updates[1].ReturnValuesOnConditionCheckFailure; got != types.ReturnValuesOnConditionCheckFailureAllOld {
				t.Errorf("ReturnValuesOnConditionCheckFailure %q, want ALL_OLD", got)
			}
			switch {
			case tc.leaseLost && !errors.Is(err, idem.ErrLeaseLost):
				t.Fatalf("Release: %v; want ErrLeaseLost", err)
			case !tc.leaseLost && err != nil:
				t.Fatalf("Release sent again after another lease took the record it left: %v; want nil", err)
			}
		})
	}
}

// TestReleaseWritesReleased: the release writes its lease under the
// schema's Released name, and nothing else of the Store removes it.
func TestReleaseWritesReleased(t *testing.T) {
	names := DefaultSchema
	names.Released = "released.by"
	ok := func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
		return &dynamodb.UpdateItemOutput{Attributes: item(t, idem.Record{Key: acq.Key, Status: idem.StatusInProgress, Lease: acq.Lease, Attempts: 1})}, nil
	}
	f := &fakeAPI{update: []func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error){ok}}
	s, err := New(f, "receipts", WithSchema(names))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Release(ctx, acq.Key, acq.Lease, idem.Released{Status: idem.StatusFailed, Reason: "", Now: t0}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Acquire(ctx, acq); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(ctx, acq.Key, acq.Lease, idem.Completion{Result: []byte("r"), ExpiresAt: t0, Now: t0}); err != nil {
		t.Fatal(err)
	}
	release, others := f.updates[0], f.updates[1:]
	var ph string
	for p, n := range release.ExpressionAttributeNames {
		if n == "released.by" {
			ph = p
		}
	}
	set := false
	for p, v := range release.ExpressionAttributeValues {
		if sv, ok := v.(*types.AttributeValueMemberS); ok && sv.Value == acq.Lease && ph != "" {
			set = set || strings.Contains(aws.ToString(release.UpdateExpression), ph+" = "+p)
		}
	}
	if !set {
		t.Errorf("release update %q (names %v): want released.by set to the lease", aws.ToString(release.UpdateExpression), release.ExpressionAttributeNames)
	}
	for _, in := range others {
		if namesUsed(in.ExpressionAttributeNames)["released.by"] {
			t.Errorf("update %q touches released.by", aws.ToString(in.UpdateExpression))
		}
	}
}

// TestSchemaReleased: a schema written before Released existed gets
// DefaultSchema's; given, it must differ from every other name.
func TestSchemaReleased(t *testing.T) {
	old := DefaultSchema
	old.Released = ""
	s, err := New(&fakeAPI{}, "receipts", WithSchema(old))
	if err != nil || s.names.Released != "released" {
		t.Fatalf("schema without Released: %+v, %v; want DefaultSchema's", s, err)
	}
	for _, bad := range []Names{
		func() Names { n := DefaultSchema; n.Released = n.Lease; return n }(),
		func() Names { n := DefaultSchema; n.LastError = "released"; return n }(),
	} {
		if _, err := New(&fakeAPI{}, "receipts", WithSchema(bad)); !errors.Is(err, idem.ErrInvalid) {
			t.Errorf("schema %+v: %v; want ErrInvalid (names not distinct)", bad, err)
		}
	}
}
