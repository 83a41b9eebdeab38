package idem_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

// The Guard on its own: a key's effect runs once, and a duplicate gets the
// stored result. In a Lambda, sqsbatch.New wraps a Guard into the SQS batch
// handler. The README's way 3 copies this example's body.
func Example() {
	// In production: store, err := dynamostore.New(dynamodb.NewFromConfig(cfg), "idempotency")
	store := idemtest.NewMemoryStore()
	guard, err := idem.New(store, "gift-cards")
	if err != nil {
		panic(err)
	}

	issue := func(ctx context.Context) ([]byte, error) {
		// The business effect. Pass the key downstream so the remote
		// system can deduplicate too.
		lease, _ := idem.LeaseFromContext(ctx)
		fmt.Println("issuing a gift card for", lease.Key)
		return []byte("card-0001"), nil
	}

	ctx := context.Background()
	payload := []byte(`{"orderId":"order-42","amountCents":2500}`)
	for range 2 { // the same message, delivered twice
		res, err := guard.Do(ctx, "order-42", payload, issue)
		switch {
		case errors.Is(err, idem.ErrInProgress):
			fmt.Println("in progress elsewhere: retry later")
		case err != nil:
			fmt.Println("failed:", err)
		default:
			fmt.Printf("%s: %s\n", res.Outcome, res.Value)
		}
	}

	// Output:
	// issuing a gift card for order-42
	// executed: card-0001
	// duplicate: card-0001
}

// Transactional mode: the effect is returned as store writes (for
// dynamostore, types.TransactWriteItem values) and committed together with
// the receipt, or not at all. No lease, no window: exactly once. The memory
// store takes writes of any type and logs them, so the example can count.
func ExampleGuard_DoTx() {
	store := idemtest.NewMemoryStore()
	guard, err := idem.New(store, "loyalty-points")
	if err != nil {
		panic(err)
	}
	addPoints := func(ctx context.Context) (idem.TxEffect, error) {
		// With dynamostore: types.TransactWriteItem{Update: &types.Update{...}}.
		return idem.TxEffect{Writes: []any{"points[c-42] += 100"}, Result: []byte("100 points")}, nil
	}
	for range 3 { // the same order, delivered three times
		res, err := guard.DoTx(context.Background(), "order-42", nil, addPoints)
		fmt.Println(res.Outcome, string(res.Value), err)
	}
	fmt.Println("writes committed:", len(store.Writes()))
	// Output:
	// executed 100 points <nil>
	// duplicate 100 points <nil>
	// duplicate 100 points <nil>
	// writes committed: 1
}

// WithCache answers duplicates from process memory: a key this process
// completed (or saw completed) costs no store request the next time. Only
// receipts are cached, so a cache hit can only ever say "duplicate".
func ExampleWithCache() {
	guard, err := idem.New(idemtest.NewMemoryStore(), "emails", idem.WithCache(1000))
	if err != nil {
		panic(err)
	}
	send := func(context.Context) ([]byte, error) { return []byte("sent"), nil }
	for range 3 {
		res, _ := guard.Do(context.Background(), "welcome:u-1", nil, send)
		fmt.Printf("%s (from the cache: %v)\n", res.Outcome, res.Cached)
	}
	// Output:
	// executed (from the cache: false)
	// duplicate (from the cache: true)
	// duplicate (from the cache: true)
}

// WithObserver sees every outcome, for metrics: count them, export them
// (the template's consumer writes CloudWatch EMF lines), alarm on
// Unconfirmed, LeaseLost and StoreError.
func ExampleWithObserver() {
	counts := map[idem.Outcome]int{}
	guard, err := idem.New(idemtest.NewMemoryStore(), "payments",
		idem.WithObserver(func(_ context.Context, e idem.Event) { counts[e.Outcome]++ })) // must be safe for concurrent use in real code
	if err != nil {
		panic(err)
	}
	pay := func(context.Context) ([]byte, error) { return nil, nil }
	fail := func(context.Context) ([]byte, error) { return nil, errors.New("card declined") }
	ctx := context.Background()
	_, _ = guard.Do(ctx, "invoice-1", nil, pay)
	_, _ = guard.Do(ctx, "invoice-1", nil, pay)
	_, _ = guard.Do(ctx, "invoice-2", nil, fail)
	fmt.Println(counts[idem.Executed], "executed,", counts[idem.Duplicate], "duplicate,", counts[idem.Failed], "failed")
	// Output:
	// 1 executed, 1 duplicate, 1 failed
}
