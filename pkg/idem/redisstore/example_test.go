package redisstore_test

import (
	"context"
	"fmt"
	"log"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/redisstore"
)

// A Guard over Redis (or Valkey), in lease mode. It needs a server, so it
// has no output to check.
func Example() {
	ctx := context.Background()
	// Create the client, the store and the Guard once, outside the Lambda
	// handler. ContextTimeoutEnabled lets a request end with its context:
	// the Guard ends a receipt's with the lease.
	client := redis.NewClient(&redis.Options{Addr: "localhost:6379", ContextTimeoutEnabled: true})
	store, err := redisstore.New(client)
	if err != nil {
		log.Fatal(err)
	}
	guard, err := idem.New(store, "gift-cards", idem.WithCache(1000))
	if err != nil {
		log.Fatal(err)
	}

	// The effect runs at most once per key while its receipt lives; a
	// duplicate gets the stored result back. One round trip to acquire, one
	// for the receipt; one for a duplicate.
	res, err := guard.Do(ctx, "order-1234", []byte(`{"amount":10}`), func(ctx context.Context) ([]byte, error) {
		return []byte("card-5678"), nil // e.g. call the gift card API
	})
	fmt.Println(res.Outcome, string(res.Value), err)
}
