package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// receipts is how many keys the eviction tests complete before memory runs
// out.
const receipts = 20

// fill writes 10 KB values without a TTL, as other data in the same server,
// after limiting its memory to 1 MB above what it uses, until gone(), or
// the server refuses a write for lack of memory. It fails t after 5,000
// values (50 MB).
func fill(t *testing.T, client *redis.Client, gone func() bool) (oom bool) {
	t.Helper()
	ctx := within(t, 60*time.Second)
	used, err := infoField(client, "memory", "used_memory")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(used)
	if err := client.ConfigSet(ctx, "maxmemory", strconv.Itoa(n+1<<20)).Err(); err != nil {
		t.Fatal(err)
	}
	value := strings.Repeat("x", 10<<10)
	for i := range 5000 {
		if err := client.Set(ctx, fmt.Sprint("other:", i), value, 0).Err(); err != nil {
			if redis.HasErrorPrefix(err, "OOM") {
				return true
			}
			t.Fatal(err)
		}
		if gone() {
			return false
		}
	}
	t.Fatal("5,000 values written, and not what the test waited for")
	return false
}

// runKeys delivers each of the receipts keys through g.
func runKeys(t *testing.T, g *idem.Guard, e *effects) map[idem.Outcome]int {
	t.Helper()
	outcomes := make(map[idem.Outcome]int)
	for i := range receipts {
		res, _ := g.Do(within(t, 10*time.Second), fmt.Sprint("k", i), nil, e.fn(nil))
		outcomes[res.Outcome]++
	}
	return outcomes
}

// TestEvictionLosesReceipts: under an eviction policy, a server that runs
// out of memory evicts receipts (every record has a TTL, so the volatile-*
// policies pick them first), and copies run their effects again. Check
// names the policy. Under noeviction the receipts stay, and no new lease
// is taken: nothing runs.
func TestEvictionLosesReceipts(t *testing.T) {
	for _, policy := range []string{"allkeys-lru", "volatile-lru"} {
		t.Run(policy, func(t *testing.T) {
			srv := newServer(t, "--maxmemory-policy", policy)
			var e effects
			g, store := guardOn(t, srv.client)
			if err := store.Check(within(t, 10*time.Second)); !errors.Is(err, idem.ErrInvalid) || !strings.Contains(err.Error(), policy) {
				t.Fatalf("Check: %v; want ErrInvalid naming %s", err, policy)
			}
			runKeys(t, g, &e)
			fill(t, srv.client, func() bool {
				n, err := srv.client.Exists(context.Background(), storageKeys(g, store.Key)...).Result()
				return err == nil && n == 0
			})
			// Every copy runs the effect again. Some may end LeaseLost: the
			// server, still full, evicted the copy's own lease before its
			// receipt, which would let a third copy run while it runs.
			copies := runKeys(t, g, &e)
			runs, _ := e.counts()
			t.Logf("copies after eviction: %v; effect ran %d times for %d keys", copies, runs, receipts)
			if runs != 2*receipts {
				t.Fatalf("effect ran %d times, want %d (every receipt evicted)", runs, 2*receipts)
			}
		})
	}

	t.Run("noeviction", func(t *testing.T) {
		srv := newServer(t, "--maxmemory-policy", "noeviction")
		var e effects
		g, store := guardOn(t, srv.client)
		if err := store.Check(within(t, 10*time.Second)); errors.Is(err, idem.ErrInvalid) {
			t.Fatalf("Check: %v; want no ErrInvalid", err)
		}
		runKeys(t, g, &e)
		if oom := fill(t, srv.client, func() bool { return false }); !oom {
			t.Fatal("the server never ran out of memory")
		}
		// The other data is refused, the receipts stay: copies are
		// duplicates (or refused while the server is over its limit).
		copies := runKeys(t, g, &e)
		n, err := srv.client.Exists(context.Background(), storageKeys(g, store.Key)...).Result()
		if runs, _ := e.counts(); runs != receipts || n != receipts || err != nil {
			t.Fatalf("copies %v; effect ran %d times, %d receipts left (%v); want %d and %d", copies, runs, n, err, receipts, receipts)
		}
		// Over its limit, the server takes no new lease: nothing runs.
		outOfMemory(t, srv.client, true)
		res, err := g.Do(within(t, 10*time.Second), "new", nil, e.fn(nil))
		if runs, _ := e.counts(); runs != receipts || res.Outcome != idem.StoreError {
			t.Fatalf("new key over the limit: %v, %v; effect ran %d times, want StoreError before the effect", res.Outcome, err, runs)
		}
	})
}

// storageKeys are the Redis keys of the receipts keys.
func storageKeys(g *idem.Guard, key func(string) string) []string {
	keys := make([]string, receipts)
	for i := range keys {
		keys[i] = key(g.StorageKey(fmt.Sprint("k", i)))
	}
	return keys
}
