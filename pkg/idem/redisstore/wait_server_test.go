package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/redisstore"
)

// TestWaitRoundTrips: with WithWaitReplicas each write is one pipeline of
// the script and its WAIT, one round trip: two per new message, one per
// duplicate, as without it. A script flushed from the server's cache
// (NOSCRIPT) is sent again with EVAL, in a second pipeline.
func TestWaitRoundTrips(t *testing.T) {
	primary := newServer(t)
	replicaOf(t, primary)
	counts := &roundTrips{}
	client := redis.NewClient(&redis.Options{Addr: primary.addr(), ContextTimeoutEnabled: true})
	client.AddHook(counts)
	t.Cleanup(func() { _ = client.Close() })
	var e effects
	g, _ := guardOn(t, client, redisstore.WithWaitReplicas(1, time.Second))
	ctx := context.Background()
	_, _ = g.Do(ctx, "warm-up", nil, e.fn(nil)) // EVALSHA, NOSCRIPT, EVAL for each script

	for _, tc := range []struct {
		name  string
		key   string
		flush bool
		want  idem.Outcome
		trips int64
	}{
		{"new message", "k", false, idem.Executed, 2},
		{"duplicate", "k", false, idem.Duplicate, 1},
		{"new message after SCRIPT FLUSH", "k2", true, idem.Executed, 4},
	} {
		if tc.flush {
			if err := primary.client.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		before := counts.n.Load()
		res, err := g.Do(within(t, 10*time.Second), tc.key, nil, e.fn(nil))
		if sent := counts.n.Load() - before; res.Outcome != tc.want || sent != tc.trips {
			t.Errorf("%s: %v, %v after %d round trips; want %v after %d", tc.name, res.Outcome, err, sent, tc.want, tc.trips)
		}
	}
}

// TestWaitRetriedAcquire: an acquire retried on another connection (its
// response was lost) finds its own lease, and must still wait for it to be
// on a replica. In Valkey and newer Redis, WAIT counts the writes of its
// own connection only, so the script writes the lease again: the WAIT
// after it fails while the replica cannot acknowledge, rather than answering
// at once for a connection that wrote nothing. (Without that write this
// test fails on Valkey 9.1; Redis 7.0 waits for the server's offset after
// any command, and passes either way.)
func TestWaitRetriedAcquire(t *testing.T) {
	primary := newServer(t)
	_, k := replicaOf(t, primary)
	now := time.Now()
	a := idem.Acquisition{Key: "ns#k", Lease: "lease-1", LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour), Now: now}
	k.hold()
	for i := range 2 { // the second time on a connection of its own
		client := redis.NewClient(&redis.Options{Addr: primary.addr(), ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = client.Close() })
		store, err := redisstore.New(client, redisstore.WithWaitReplicas(1, 100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := store.Acquire(within(t, 10*time.Second), a); !errors.Is(err, redisstore.ErrNotReplicated) {
			t.Fatalf("acquire %d with the replica cut off: %v; want ErrNotReplicated", i+1, err)
		}
	}
}
