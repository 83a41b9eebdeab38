// Package retry is the retry loop of this module's stores (dynamostore,
// redisstore): each store decides what is transient and how many attempts a
// request gets; the loop and the backoff are the same for all.
package retry

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Backoff of the stores: capped exponential with full jitter, so that the
// consumers of one throttled table or server do not retry in lockstep, and
// short, so that a receipt has many tries within a few seconds of margin.
const (
	Base = 25 * time.Millisecond
	Cap  = 400 * time.Millisecond
)

// Jitter is the wait before retry n (0-based): up to Base·2ⁿ, at most Cap,
// chosen at random, plus a millisecond.
func Jitter(n int) time.Duration {
	d := Cap
	if n < 16 {
		d = min(Cap, Base<<n)
	}
	return rand.N(d) + time.Millisecond
}

// Do calls op until it succeeds, fails for good (transient says no), ctx
// ends, or tries attempts were made (0: until ctx ends), waiting backoff(n)
// before retry n. Every retry is the same request: the stores make their
// requests idempotent.
func Do(ctx context.Context, tries int, transient func(error) bool, backoff func(n int) time.Duration, op func(context.Context) error) error {
	for attempt := 0; ; attempt++ {
		err := op(ctx)
		if err == nil || !transient(err) {
			return err
		}
		if tries > 0 && attempt+1 >= tries {
			return fmt.Errorf("gave up after %d attempts: %w", attempt+1, err)
		}
		t := time.NewTimer(backoff(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("gave up after %d attempts: %w", attempt+1, errors.Join(err, ctx.Err()))
		case <-t.C:
		}
	}
}
