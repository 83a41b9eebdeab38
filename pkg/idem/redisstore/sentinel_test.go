package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/redisstore"
)

// newSentinel starts a Sentinel (redis-server --sentinel) that watches
// primary as "m", alone (quorum 1), quick to fail over: the primary is down
// after 200 ms without an answer.
func newSentinel(tb testing.TB, primary *server) *server {
	tb.Helper()
	path := serverPath(tb, "redis-server")
	port, err := freePort()
	if err != nil {
		tb.Fatal(err)
	}
	s := &server{tb: tb, path: path, dir: tb.TempDir(), port: port}
	conf := filepath.Join(s.dir, "sentinel.conf") // Sentinel rewrites it: a file of its own
	text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\n"+
		"sentinel monitor m 127.0.0.1 %d 1\nsentinel down-after-milliseconds m 200\nsentinel failover-timeout m 10000\n",
		port, s.dir, primary.port)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		tb.Fatal(err)
	}
	s.args = []string{conf, "--sentinel"}
	if err := s.start(); err != nil {
		tb.Fatal(err)
	}
	return s
}

// sentinelSays waits until the sentinel answers what to ask with want.
func sentinelSays(t *testing.T, sentinel *server, what string, want func([]any) bool, args ...any) {
	t.Helper()
	waitFor(t, what, 60*time.Second, func() (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		v, err := sentinel.client.Do(ctx, append([]any{"SENTINEL"}, args...)...).Slice()
		return err == nil && want(v), err
	})
}

// TestSentinelFailover: with a real Sentinel and go-redis's failover client
// (a *redis.Client, so WithWaitReplicas pipelines its WAIT), a receipt
// written with WAIT survives the primary's crash: the promoted replica
// answers the copy Duplicate. The price: the new primary has no replica,
// so no new lease is taken (StoreError, nothing runs), and Check says why.
func TestSentinelFailover(t *testing.T) {
	durable := []string{"--appendonly", "yes", "--appendfsync", "always"}
	primary := newServer(t, durable...)
	replica, _ := replicaOf(t, primary, durable...)
	sentinel := newSentinel(t, primary)
	sentinelSays(t, sentinel, "Sentinel to see the replica", func(v []any) bool { return len(v) == 1 }, "REPLICAS", "m")

	client := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: "m", SentinelAddrs: []string{sentinel.addr()}, ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { _ = client.Close() })
	var e effects
	first, store := guardOn(t, client, redisstore.WithWaitReplicas(1, time.Second))
	if err := store.Check(within(t, 10*time.Second)); err != nil {
		t.Fatalf("Check before the failover: %v, want nil", err)
	}
	if res, err := first.Do(within(t, 10*time.Second), "k", nil, e.fn(nil)); res.Outcome != idem.Executed {
		t.Fatalf("first: %v, %v; want Executed", res.Outcome, err)
	}

	start := time.Now()
	primary.kill()
	sentinelSays(t, sentinel, "Sentinel to promote the replica", func(v []any) bool {
		return len(v) == 2 && v[1] == strconv.Itoa(replica.port)
	}, "GET-MASTER-ADDR-BY-NAME", "m")
	t.Logf("Sentinel failed over in %s", time.Since(start).Round(time.Millisecond))

	second, _ := guardOn(t, client, redisstore.WithWaitReplicas(1, time.Second))
	res, err := second.Do(within(t, 30*time.Second), "k", nil, e.fn(nil))
	if runs, _ := e.counts(); res.Outcome != idem.Duplicate || runs != 1 {
		t.Fatalf("copy after the failover: %v, %v; effect ran %d times, want Duplicate and 1", res.Outcome, err, runs)
	}
	if err := store.Check(within(t, 10*time.Second)); !errors.Is(err, idem.ErrInvalid) {
		t.Fatalf("Check after the failover: %v, want ErrInvalid (no replica connected)", err)
	} else {
		t.Logf("Check after the failover: %v", err)
	}
	res, err = second.Do(within(t, 10*time.Second), "new", nil, e.fn(nil))
	if runs, _ := e.counts(); res.Outcome != idem.StoreError || !errors.Is(err, redisstore.ErrNotReplicated) || runs != 1 {
		t.Fatalf("new key without a replica: %v, %v; effect ran %d times, want StoreError before the effect", res.Outcome, err, runs)
	}
}
