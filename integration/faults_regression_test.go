//go:build integration

package integration

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/sqsidem/integration/internal/emu"
	"github.com/exactlyonce/sqsidem/integration/internal/faultproxy"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// The deterministic cases the fault mix found, one by one.

// isComplete reports whether a request writes a receipt.
func isComplete(r faultproxy.Request) bool {
	return r.Op == "UpdateItem" && bytes.Contains(r.Body, []byte(`"COMPLETED"`))
}

// An acquire whose response is lost is sent again; the retry finds the
// record the first one wrote. That is the caller's own lease: the effect
// runs (before: "in progress", and the key blocked until the lease ended).
func faultAcquireAckLost(t *testing.T) {
	e := newFaultEnv(t)
	var first atomic.Bool
	e.proxy.SetDecider(func(r faultproxy.Request) faultproxy.Action {
		if r.Op == "UpdateItem" && !isComplete(r) && first.CompareAndSwap(false, true) {
			return faultproxy.Action{Kind: faultproxy.LoseAck}
		}
		return faultproxy.Action{}
	})
	g, err := idem.New(e.store, "ackloss")
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	ctx, cancel := context.WithTimeout(context.Background(), faultInvocation)
	defer cancel()
	res, err := g.Do(ctx, "order-1", []byte("p"), func(context.Context) ([]byte, error) { runs++; return nil, nil })
	if err != nil || res.Outcome != idem.Executed || res.Attempts != 1 || runs != 1 {
		t.Fatalf("Do after a lost acquire response: %+v, %v, runs %d; want Executed on attempt 1", res, err, runs)
	}
	if f := e.proxy.Faults(); f[faultproxy.LoseAck] != 1 {
		t.Fatalf("faults %v: the acknowledgement was never lost", f)
	}
}

// The receipt write is throttled past the end of a 2 s lease. It must stop
// at the lease end (and its margin) and say so (Unconfirmed); before, it
// went on for 30 s while another delivery took over, and reported
// LeaseLost.
//
// No bound on A's elapsed time (a loaded machine stretches every step):
// A's receipt writes, told apart by its fencing token, are throttled until
// B has completed. B starts once the lease A's record holds and the
// margin have ended — no sooner (a lower bound), whenever A gives up —
// takes the key over and completes; then A's writes are let through. An A
// that still retries after its lease, as before, reaches the store then,
// is refused by B's fence and reports LeaseLost; an A that stopped at the
// end of its lease has nothing left to send and reports Unconfirmed.
func faultCompleteThrottledPastLease(t *testing.T) {
	e := newFaultEnv(t)
	const lease, margin = 2 * time.Second, 500 * time.Millisecond
	var tokenA atomic.Pointer[string]
	bDone := make(chan struct{})
	e.proxy.SetDecider(func(r faultproxy.Request) faultproxy.Action {
		select {
		case <-bDone:
			return faultproxy.Action{}
		default:
		}
		if tok := tokenA.Load(); tok != nil && isComplete(r) && bytes.Contains(r.Body, []byte(*tok)) {
			return faultproxy.Action{Kind: faultproxy.Throttle}
		}
		return faultproxy.Action{}
	})
	g, err := idem.New(e.store, "throttled", idem.WithLease(lease), idem.WithSafetyMargin(margin))
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	effectA := func(ctx context.Context) ([]byte, error) {
		runs.Add(1)
		if l, ok := idem.LeaseFromContext(ctx); ok {
			tokenA.Store(&l.Token)
		}
		return nil, nil
	}
	var a idem.Result
	var aErr error
	aDone := make(chan struct{})
	go func() {
		defer close(aDone)
		a, aErr = g.Do(context.Background(), "order-1", nil, effectA) // no deadline: only the lease bounds it
	}()
	ctx := ctxFor(t, time.Minute)
	for {
		rec, found, err := e.store.Get(ctx, g.StorageKey("order-1"))
		if err != nil {
			t.Fatal(err)
		}
		if found && rec.Status == idem.StatusInProgress && time.Now().After(rec.LeaseUntil.Add(margin)) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for A's lease and margin to end (record %+v): %v", rec, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	// B is another instance: A's own Guard owes A's receipt and would
	// write it first.
	other, err := idem.New(e.store, "throttled", idem.WithLease(lease), idem.WithSafetyMargin(margin))
	if err != nil {
		t.Fatal(err)
	}
	effectB := func(context.Context) ([]byte, error) { runs.Add(1); return nil, nil }
	b, bErr := other.Do(ctx, "order-1", nil, effectB)
	close(bDone)
	if b.Outcome == idem.LeaseLost || bErr != nil {
		t.Fatalf("B: %v, %v; want it done, having taken the key over", b.Outcome, bErr)
	}
	await(t, ctx, aDone, "A's Do to return")
	if a.Outcome != idem.Unconfirmed || !errors.Is(aErr, idem.ErrUnconfirmed) || !errors.Is(aErr, idem.ErrStore) {
		t.Fatalf("A: %v, %v; want Unconfirmed (its receipt write stopped at the end of its lease)", a.Outcome, aErr)
	}
	t.Logf("A %v; B %v; effects %d (the window: A's receipt could not be written within its lease)", a.Outcome, b.Outcome, runs.Load())
}

// The client's SDK retry quota is empty (a burst of throttling drained it):
// the SDK would not retry at all. The store's own retries must still land
// the receipt.
func faultRetryQuotaExhausted(t *testing.T) {
	e := newFaultEnv(t)
	ctx := context.Background()
	client, _, err := emu.Clients(ctx, e.proxy.URL(), e.proxy.URL())
	if err != nil {
		t.Fatal(err)
	}
	starved := dynamodb.New(client.Options(), func(o *dynamodb.Options) {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.RateLimiter = ratelimit.NewTokenRateLimit(1) // a retry costs 5: none left
		})
	})
	store, err := dynamostore.New(starved, e.receipts)
	if err != nil {
		t.Fatal(err)
	}
	var throttled atomic.Int32
	e.proxy.SetDecider(func(r faultproxy.Request) faultproxy.Action {
		if isComplete(r) && throttled.Add(1) <= 3 {
			return faultproxy.Action{Kind: faultproxy.Throttle}
		}
		return faultproxy.Action{}
	})
	g, err := idem.New(store, "quota")
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, faultInvocation)
	defer cancel()
	res, err := g.Do(cctx, "order-1", nil, func(context.Context) ([]byte, error) { return nil, nil })
	if err != nil || res.Outcome != idem.Executed {
		t.Fatalf("Do with an empty SDK retry quota and 3 throttled receipt writes: %v, %v; want Executed", res.Outcome, err)
	}
}

// DynamoDB unreachable: a store error is not the effect's error, and a batch
// in which every record failed on the store makes Handle fail, so that the
// event source mapping backs off.
func faultStoreDown(t *testing.T) {
	e := newFaultEnv(t)
	e.proxy.SetDecider(func(faultproxy.Request) faultproxy.Action { return faultproxy.Action{Kind: faultproxy.Fail} })
	g, err := idem.New(e.store, "down")
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	ctx, cancel := context.WithTimeout(context.Background(), faultInvocation)
	defer cancel()
	res, err := g.Do(ctx, "order-1", nil, func(context.Context) ([]byte, error) { ran = true; return nil, nil })
	if ran || res.Outcome != idem.StoreError || !errors.Is(err, idem.ErrStore) {
		t.Fatalf("Do with DynamoDB down: %v, %v (ran %v); want StoreError", res.Outcome, err, ran)
	}
	h, err := sqsbatch.New(g, sqsbatch.MessageID, func(context.Context, string, events.SQSMessage) ([]byte, error) { return nil, nil },
		sqsbatch.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", Body: "{}"}, {MessageId: "m2", Body: "{}"}}}
	resp, err := h.Handle(ctx, ev)
	if !errors.Is(err, sqsbatch.ErrStoreDown) || len(resp.BatchItemFailures) != 2 {
		t.Fatalf("Handle with DynamoDB down: %v, %v; want ErrStoreDown", resp, err)
	}
}
