//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/integration/kit"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// TestKit: the template's deployed stack proved by the kit a team runs
// against its own (integration/kit): duplicates in a batch and later,
// copies from 3 senders at once, a key with another payload, keyless and
// malformed messages, the DLQ and the metrics — with the template's probe
// (the partner's count in lease mode, the ledger in transactional mode).
// The fault scenarios are skipped: the template's localstack profile is
// not the construct's preset (its own suite crashes and poisons through
// the fault hook). It runs after TestDeployedStack, whose DLQ count it
// would otherwise change.
func TestKit(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	d := deployed(ctx, t)
	cancel()
	message := func(key string, variant int) kit.Message {
		body, err := d.probe.Message(key, variant)
		if err != nil {
			panic(fmt.Sprintf("the probe's message for %s: %v", key, err)) // the probe only marshals a map
		}
		return kit.Message{Body: string(body)}
	}
	kit.Run(t, kit.App{
		Stack: d.stackName, Consumer: consumer.DefaultConsumerID, Message: message,
		Malformed: func(key string) kit.Message { // refused by the effect: effect.ErrBadOrder
			return kit.JSON(map[string]any{contract.KeyField: key, "customer": "c-1", "amountCents": -1})
		},
		Seed: func(ctx context.Context, _ kit.Stack, keys []string) error { return d.probe.Seed(ctx, keys) },
		Applied: func(ctx context.Context, _ kit.Stack, keys []string) (map[string]int, error) {
			return d.probe.Applied(ctx, keys)
		},
	})
}
