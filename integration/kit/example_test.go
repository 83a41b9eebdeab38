package kit_test

import (
	"context"
	"testing"

	"github.com/exactlyonce/sqsidem/integration/kit"
)

// A team's whole end-to-end test: its stack, its consumer's construct id,
// a valid message for a key, and its probe. Here the effect is a counter
// per key the application reads from its own store (counts stands for it).
func Example() {
	var counts map[string]int // the application's own store
	app := kit.App{
		Stack:    "ShopLocal",
		Consumer: "Orders",
		Message: func(key string, variant int) kit.Message {
			return kit.JSON(map[string]any{"orderId": key, "quantity": 1 + variant})
		},
		Malformed: func(key string) kit.Message { return kit.JSON(map[string]any{"orderId": key, "quantity": -1}) },
		Applied: func(_ context.Context, _ kit.Stack, keys []string) (map[string]int, error) {
			n := map[string]int{}
			for _, k := range keys {
				n[k] = counts[k]
			}
			return n, nil
		},
	}
	// In the team's e2e test file:
	_ = func(t *testing.T) { kit.Run(t, app) }
	_ = func(t *testing.T) { kit.NothingLeft(t, app.Stack, nil) } // after the stack is destroyed
}
