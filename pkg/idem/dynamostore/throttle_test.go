package dynamostore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// throttles are DynamoDB's throttling errors: a store outage the Store
// retries, never the caller's mistake (ErrInvalid) nor a lost lease.
var throttles = []struct {
	name string
	err  func() error
	as   func(error) bool
}{
	{"ProvisionedThroughputExceeded",
		func() error { return &types.ProvisionedThroughputExceededException{Message: aws.String("slow down")} },
		func(err error) bool { var e *types.ProvisionedThroughputExceededException; return errors.As(err, &e) }},
	{"Throttling",
		func() error { return &types.ThrottlingException{Message: aws.String("slow down")} },
		func(err error) bool { var e *types.ThrottlingException; return errors.As(err, &e) }},
	{"RequestLimitExceeded",
		func() error { return &types.RequestLimitExceeded{Message: aws.String("slow down")} },
		func(err error) bool { var e *types.RequestLimitExceeded; return errors.As(err, &e) }},
}

func throttledGuard(t *testing.T, f *fakeAPI) *idem.Guard {
	t.Helper()
	g, err := idem.New(newTestStore(t, f), "ns", idem.WithSafetyMargin(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestThrottledAcquireIsStoreError: an acquire throttled on every try is
// retried acquireTries times, then the Guard reports StoreError wrapping
// idem.ErrStore and the throttling error, and the effect does not run.
func TestThrottledAcquireIsStoreError(t *testing.T) {
	for _, tc := range throttles {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeAPI{update: []func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error){
				func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) { return nil, tc.err() },
			}}
			ran := false
			res, err := throttledGuard(t, f).Do(context.Background(), "k", []byte("p"), func(context.Context) ([]byte, error) {
				ran = true
				return nil, nil
			})
			if res.Outcome != idem.StoreError || !errors.Is(err, idem.ErrStore) || !tc.as(err) {
				t.Fatalf("throttled acquire: %v, %v; want StoreError wrapping idem.ErrStore and the throttling error", res.Outcome, err)
			}
			if errors.Is(err, idem.ErrInvalid) || errors.Is(err, idem.ErrLeaseLost) || errors.Is(err, idem.ErrInProgress) {
				t.Fatalf("throttled acquire: %v; must not be ErrInvalid, ErrLeaseLost or ErrInProgress", err)
			}
			if ran || len(f.updates) != acquireTries {
				t.Fatalf("effect ran %v after %d requests; want no run after %d (throttling is retried)", ran, len(f.updates), acquireTries)
			}
		})
	}
}

// TestThrottledReceiptIsUnconfirmed: the effect ran and its receipt is
// throttled until the caller's deadline: the Guard reports Unconfirmed,
// wrapping idem.ErrUnconfirmed and idem.ErrStore, after retrying.
func TestThrottledReceiptIsUnconfirmed(t *testing.T) {
	for _, tc := range throttles {
		t.Run(tc.name, func(t *testing.T) {
			acquired := &dynamodb.UpdateItemOutput{Attributes: item(t, idem.Record{Key: "ns#k", Status: idem.StatusInProgress, Attempts: 1})}
			f := &fakeAPI{update: []func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error){
				func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) { return acquired, nil },
				func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) { return nil, tc.err() },
			}}
			ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
			defer cancel()
			ran := 0
			res, err := throttledGuard(t, f).Do(ctx, "k", []byte("p"), func(context.Context) ([]byte, error) {
				ran++
				return []byte("r"), nil
			})
			if res.Outcome != idem.Unconfirmed || !errors.Is(err, idem.ErrUnconfirmed) || !errors.Is(err, idem.ErrStore) || !tc.as(err) {
				t.Fatalf("throttled receipt: %v, %v; want Unconfirmed wrapping idem.ErrUnconfirmed, idem.ErrStore and the throttling error", res.Outcome, err)
			}
			if errors.Is(err, idem.ErrInvalid) || errors.Is(err, idem.ErrLeaseLost) {
				t.Fatalf("throttled receipt: %v; must not be ErrInvalid or ErrLeaseLost", err)
			}
			if ran != 1 || len(f.updates) < 3 {
				t.Fatalf("effect ran %d times, %d requests; want 1 run and the receipt retried", ran, len(f.updates))
			}
		})
	}
}
