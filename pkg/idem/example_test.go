package idem_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

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
