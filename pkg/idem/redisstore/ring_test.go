package redisstore_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// ringScripts hides a *redis.Ring from New, which refuses it, to show why.
type ringScripts struct{ *redis.Ring }

// TestRingMovesKeys shows why New refuses a *redis.Ring: two shards, one
// of which stops answering while an effect runs under a lease it holds.
// The ring moves the key to the live shard, where a copy takes a lease and
// runs the effect at the same time; the frozen shard, resumed, still holds
// the first lease. No setting makes a ring keep a record where it is.
func TestRingMovesKeys(t *testing.T) {
	shards := map[string]*server{"a": newServer(t), "b": newServer(t)}
	ring := redis.NewRing(&redis.RingOptions{
		Addrs:                 map[string]string{"a": shards["a"].addr(), "b": shards["b"].addr()},
		HeartbeatFrequency:    50 * time.Millisecond,
		ContextTimeoutEnabled: true,
		HeartbeatFn: func(ctx context.Context, c *redis.Client) bool {
			ctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			return c.Ping(ctx).Err() == nil
		},
	})
	t.Cleanup(func() { _ = ring.Close() })
	var e effects
	first, store := guardOn(t, ringScripts{ring})
	second, _ := guardOn(t, ringScripts{ring})
	key := store.Key(first.StorageKey("k"))

	started, finish, done := make(chan struct{}), make(chan struct{}), make(chan idem.Result, 1)
	go func() {
		res, _ := first.Do(within(t, 20*time.Second), "k", nil, e.fn(func() { close(started); <-finish }))
		done <- res
	}()
	waitChan(t, started, "the first effect to start")
	holder := ""
	for name, s := range shards {
		if n, _ := s.client.Exists(context.Background(), key).Result(); n == 1 {
			holder = name
		}
	}
	if holder == "" {
		t.Fatal("no shard holds the lease")
	}
	shards[holder].signal(syscall.SIGSTOP) // it stops answering, its data intact
	waitFor(t, "the ring to drop the frozen shard", 30*time.Second, func() (bool, error) { return ring.Len() == 1, nil })

	res, err := second.Do(within(t, 10*time.Second), "k", nil, e.fn(nil))
	runs, most := e.counts()
	if res.Outcome != idem.Executed || runs != 2 || most != 2 {
		t.Fatalf("copy while the lease's shard is frozen: %v, %v; %d runs, %d at once; want Executed, 2 at once", res.Outcome, err, runs, most)
	}
	shards[holder].signal(syscall.SIGCONT)
	rec, err := shards[holder].client.HGetAll(context.Background(), key).Result()
	if err != nil || rec["status"] != string(idem.StatusInProgress) {
		t.Fatalf("the frozen shard, resumed: %v, %v; want the first lease still IN_PROGRESS", rec, err)
	}
	close(finish)
	t.Logf("first attempt: %v", waitResult(t, done).Outcome)
}
