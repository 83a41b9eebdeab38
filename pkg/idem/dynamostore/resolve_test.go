package dynamostore

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// held is a record parked by WithUnknownOutcome(Hold): no expiry.
func held() idem.Record {
	return idem.Record{Key: "ns#abc", Status: idem.StatusHeld, Lease: "tok", LeaseUntil: t0.Add(-time.Minute),
		Attempts: 2, Fingerprint: "fp", UpdatedAt: t0, LastError: "unknown outcome"}
}

// heldItem is held() as the table keeps it.
func heldItem(t *testing.T) map[string]types.AttributeValue {
	it := item(t, held())
	delete(it, "expiresAt")
	it["lastError"] = &types.AttributeValueMemberS{Value: "unknown outcome"}
	return it
}

// values are the request's expression values by their text.
func values(in *dynamodb.UpdateItemInput) map[string]bool {
	out := map[string]bool{}
	for _, v := range in.ExpressionAttributeValues {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			out["S:"+v.Value] = true
		case *types.AttributeValueMemberN:
			out["N:"+v.Value] = true
		case *types.AttributeValueMemberBOOL:
			out["BOOL:"+strconv.FormatBool(v.Value)] = true
		}
	}
	return out
}

// TestResolveRequest: one UpdateItem conditioned on the whole record as
// read — its lease, status, attempts and update time — that writes a
// receipt without a result, marked resolved, under a token of its own,
// and gives a held record the expiry it lacks.
func TestResolveRequest(t *testing.T) {
	later := t0.Add(time.Minute)
	expires := t0.Add(7 * 24 * time.Hour)
	for _, tc := range []struct {
		name    string
		old     idem.Record
		to      idem.Status
		want    []string // values the request must hold
		names   []string // attributes it must name
		noNames []string
	}{
		{"held, done", held(), idem.StatusCompleted,
			[]string{"S:tok", "S:HELD", "N:2", "N:" + strconv.FormatInt(t0.UnixMilli(), 10), "S:COMPLETED", "BOOL:true",
				"N:" + strconv.FormatInt(later.UnixMilli(), 10), "N:" + strconv.FormatInt(expires.Unix(), 10)},
			[]string{"lease", "status", "attempts", "updatedAt", "expiresAt", "resolved", "resultOmitted", "result", "lastError"}, nil},
		{"held, not done", held(), idem.StatusFailed,
			[]string{"S:tok", "S:HELD", "N:2", "S:FAILED", "S:" + notDoneReason, "N:" + strconv.FormatInt(expires.Unix(), 10)},
			[]string{"lease", "status", "attempts", "updatedAt", "expiresAt", "lastError"}, []string{"resolved"}},
		{"unknown with an expiry keeps it", func() idem.Record {
			r := held()
			r.Status, r.ExpiresAt = idem.StatusUnknown, t0.Add(time.Hour)
			return r
		}(), idem.StatusCompleted, []string{"S:UNKNOWN", "BOOL:true"}, []string{"resolved"}, []string{"expiresAt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeAPI{update: []func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error){
				func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
					return &dynamodb.UpdateItemOutput{}, nil
				},
			}}
			_, changed, err := newTestStore(t, f).Resolve(t.Context(), "ns#abc", tc.old, tc.to, expires, later)
			if err != nil || changed || len(f.updates) != 1 {
				t.Fatalf("Resolve: changed %v, %v after %d requests", changed, err, len(f.updates))
			}
			in := f.updates[0]
			cond, upd := aws.ToString(in.ConditionExpression), aws.ToString(in.UpdateExpression)
			usesOnlyPlaceholders(t, cond, in.ExpressionAttributeNames, in.ExpressionAttributeValues)
			usesOnlyPlaceholders(t, upd, in.ExpressionAttributeNames, in.ExpressionAttributeValues)
			vals, used := values(in), namesUsed(in.ExpressionAttributeNames)
			for _, v := range tc.want {
				if !vals[v] {
					t.Errorf("no value %s in %v", v, vals)
				}
			}
			for _, n := range tc.names {
				if !used[n] {
					t.Errorf("attribute %s not named: %v (%s; %s)", n, used, cond, upd)
				}
			}
			for _, n := range tc.noNames {
				if used[n] {
					t.Errorf("attribute %s named: %s; %s", n, cond, upd)
				}
			}
			var token bool
			for v := range vals {
				token = token || strings.HasPrefix(v, "S:"+resolveTokenPrefix)
			}
			if token != (tc.to == idem.StatusCompleted) {
				t.Errorf("a new %s… token: %v, want %v", resolveTokenPrefix, token, tc.to == idem.StatusCompleted)
			}
			if in.ReturnValuesOnConditionCheckFailure != types.ReturnValuesOnConditionCheckFailureAllOld {
				t.Error("a failed condition returns no record")
			}
		})
	}
}

// TestResolveAnswers: a record that changed is returned as it is now,
// written over by nothing; one that is gone is the zero record; a retried
// write whose first attempt landed finds its own record and is written.
func TestResolveAnswers(t *testing.T) {
	later := t0.Add(time.Minute)
	expires := t0.Add(time.Hour)
	late := item(t, completed()) // the zombie's late receipt
	throttled := func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
		return nil, &types.InternalServerError{Message: aws.String("the write landed, its answer was lost")}
	}
	// wrote is the item the request writes over held().
	wrote := func(in *dynamodb.UpdateItemInput) map[string]types.AttributeValue {
		rec := held()
		rec.Status, rec.UpdatedAt, rec.ExpiresAt = idem.StatusCompleted, later, expires
		for v := range values(in) {
			if s, ok := strings.CutPrefix(v, "S:"); ok && strings.HasPrefix(s, resolveTokenPrefix) {
				rec.Lease = s
			}
		}
		it := item(t, rec)
		it["resolved"] = &types.AttributeValueMemberBOOL{Value: true}
		return it
	}
	// ownWrite answers as DynamoDB does a retry of a write that landed:
	// the condition fails, on the record the first attempt wrote.
	ownWrite := func(in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) { return nil, ccf(wrote(in)) }
	for _, tc := range []struct {
		name        string
		answers     []func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error)
		changed     bool
		status      idem.Status
		resolved    bool
		wantUpdates int
	}{
		{"written", []func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error){
			func(in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
				return &dynamodb.UpdateItemOutput{Attributes: wrote(in)}, nil
			}}, false, idem.StatusCompleted, true, 1},
		{"changed", []func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error){
			func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) { return nil, ccf(late) }}, true, idem.StatusCompleted, false, 1},
		{"gone", []func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error){
			func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) { return nil, ccf(nil) }}, true, "", false, 1},
		{"retried after it landed", []func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error){throttled, ownWrite},
			false, idem.StatusCompleted, true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeAPI{update: tc.answers}
			rec, changed, err := newTestStore(t, f).Resolve(t.Context(), "ns#abc", held(), idem.StatusCompleted, expires, later)
			if err != nil || changed != tc.changed || rec.Status != tc.status || rec.Resolved != tc.resolved || len(f.updates) != tc.wantUpdates {
				t.Fatalf("Resolve: %+v, changed %v, %v after %d requests; want %s, changed %v, resolved %v",
					rec, changed, err, len(f.updates), tc.status, tc.changed, tc.resolved)
			}
		})
	}
}

// TestResolveRefuses what it cannot write, before any request.
func TestResolveRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		to      idem.Status
		expires time.Time
	}{
		"to HELD":               {idem.StatusHeld, t0.Add(time.Hour)},
		"to IN_PROGRESS":        {idem.StatusInProgress, t0.Add(time.Hour)},
		"held, without expires": {idem.StatusCompleted, time.Time{}},
	} {
		f := &fakeAPI{}
		_, _, err := newTestStore(t, f).Resolve(t.Context(), "ns#abc", held(), tc.to, tc.expires, t0)
		if !errors.Is(err, idem.ErrInvalid) || f.calls() != 0 {
			t.Errorf("%s: %v after %d requests; want ErrInvalid before any", name, err, f.calls())
		}
	}
}

// TestDecodeResolved: the resolved attribute counts on a COMPLETED record
// only (acquires and commits remove it: resolve_semantics_test.go).
func TestDecodeResolved(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status idem.Status
		lease  string
		attr   types.AttributeValue
		want   bool
	}{
		{"resolve's receipt", idem.StatusCompleted, resolveTokenPrefix + "X", &types.AttributeValueMemberBOOL{Value: true}, true},
		{"no attribute", idem.StatusCompleted, resolveTokenPrefix + "X", nil, false},
		{"false", idem.StatusCompleted, resolveTokenPrefix + "X", &types.AttributeValueMemberBOOL{Value: false}, false},
		{"taken over after it expired", idem.StatusInProgress, "0123abcd", &types.AttributeValueMemberBOOL{Value: true}, false},
	} {
		rec := completed()
		rec.Status, rec.Lease = tc.status, tc.lease
		it := item(t, rec)
		if tc.attr != nil {
			it["resolved"] = tc.attr
		}
		got, err := newTestStore(t, &fakeAPI{}).decode(it)
		if err != nil || got.Resolved != tc.want {
			t.Errorf("%s: Resolved %v, %v; want %v", tc.name, got.Resolved, err, tc.want)
		}
	}
	// A schema written before the attribute existed reads it by its default
	// name.
	s, err := New(&fakeAPI{}, "receipts", WithSchema(Names{PartitionKey: "pk", TTL: "expiresAt", Status: "status", Lease: "lease",
		LeaseUntil: "leaseUntil", Attempts: "attempts", Fingerprint: "fingerprint", Result: "result", NoResult: "resultOmitted",
		UpdatedAt: "updatedAt", LastError: "lastError"}))
	if err != nil || s.names.Resolved != DefaultSchema.Resolved {
		t.Errorf("an older schema: %v, Resolved %q", err, s.names.Resolved)
	}
}
