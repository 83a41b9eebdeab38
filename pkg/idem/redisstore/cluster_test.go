package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
	"github.com/exactlyonce/sqsidem/pkg/idem/redisstore"
)

// newCluster starts a Redis Cluster of three primaries with a replica each
// (redis-cli --cluster create), and returns its servers, primaries first.
func newCluster(t *testing.T) []*server {
	t.Helper()
	cli := serverPath(t, "redis-cli")
	nodes := make([]*server, 6)
	addrs := make([]string, len(nodes))
	for i := range nodes {
		nodes[i] = newServer(t, "--cluster-enabled", "yes", "--cluster-node-timeout", "2000",
			"--appendonly", "yes", "--appendfsync", "everysec")
		addrs[i] = nodes[i].addr()
	}
	ctx := within(t, 60*time.Second)
	out, err := exec.CommandContext(ctx, cli, append(append([]string{"--cluster", "create"}, addrs...),
		"--cluster-replicas", "1", "--cluster-yes")...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	// Every node must know every replica's primary, or a manual failover
	// finds no votes.
	for _, n := range nodes {
		waitFor(t, "the cluster to be ok on "+n.addr(), 60*time.Second, func() (bool, error) {
			state, err := infoCluster(n.client, "cluster_state")
			if state != "ok" {
				return false, err
			}
			view, err := n.client.ClusterNodes(context.Background()).Result()
			return strings.Count(view, " slave ")+strings.Count(view, ",slave ") == 3, err
		})
	}
	// redis-cli pairs them as it likes: primaries are the nodes with slots.
	var primaries, replicas []*server
	for _, n := range nodes {
		if role, _ := infoField(n.client, "replication", "role"); role == "master" {
			primaries = append(primaries, n)
		} else {
			replicas = append(replicas, n)
		}
	}
	if len(primaries) != 3 {
		t.Fatalf("%d primaries, want 3", len(primaries))
	}
	return append(primaries, replicas...)
}

// infoCluster reads one field of CLUSTER INFO.
func infoCluster(c *redis.Client, field string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	info, err := c.ClusterInfo(ctx).Result()
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v, nil
		}
	}
	return "", err
}

// replicaFor returns the replica of the primary at addr.
func replicaFor(t *testing.T, nodes []*server, addr string) *server {
	t.Helper()
	for _, n := range nodes {
		host, _ := infoField(n.client, "replication", "master_host")
		port, _ := infoField(n.client, "replication", "master_port")
		if host+":"+port == addr {
			return n
		}
	}
	t.Fatalf("no replica of %s", addr)
	return nil
}

// TestCluster: the scripts touch one key each, so the Store passes the
// conformance suite on a cluster of three shards, with WAIT sent to each
// key's master; a frozen replica fails the writes of its shard only; and
// after a failover of a shard (CLUSTER FAILOVER) the receipt written with
// WAIT is on the new master, which the Store finds by the MOVED the old one
// answers.
func TestCluster(t *testing.T) {
	nodes := newCluster(t)
	addrs := make([]string, 3)
	for i, n := range nodes[:3] {
		addrs[i] = n.addr()
	}
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	store, err := redisstore.New(client, redisstore.WithWaitReplicas(1, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	shardsInSync(t, client)
	if err := store.Check(within(t, 10*time.Second)); err != nil {
		t.Fatalf("Check: %v", err)
	}
	t.Run("conformance", func(t *testing.T) {
		idemtest.TestStore(t, func(*testing.T) idem.Store { return store })
	})
	t.Run("scan walks every master, resolve settles", func(t *testing.T) {
		put(t, store, "scan", 60, time.Now())
		masters := map[string]bool{}
		for key := range scanned(t, store, "scan") {
			m, err := client.MasterForKey(context.Background(), store.Key(key))
			if err != nil {
				t.Fatal(err)
			}
			masters[m.Options().Addr] = true
		}
		if got := len(scanned(t, store, "scan")); got != 60 || len(masters) != 3 {
			t.Fatalf("Scan: %d records on %d masters; want 60 on 3", got, len(masters))
		}
		held, _, err := store.Get(within(t, 5*time.Second), "scan#0000")
		if err != nil {
			t.Fatal(err)
		}
		if rec, changed, err := store.Resolve(within(t, 5*time.Second), "scan#0000", held, idem.StatusCompleted, time.Now().Add(time.Hour), time.Now()); err != nil || changed || !rec.Resolved {
			t.Fatalf("Resolve on the cluster: %+v, changed %v, %v", rec, changed, err)
		}
	})

	var e effects
	first, _ := guardOn(t, client, redisstore.WithWaitReplicas(1, 200*time.Millisecond))
	ctx := context.Background()
	master, err := client.MasterForKey(ctx, store.Key(first.StorageKey("k")))
	if err != nil {
		t.Fatal(err)
	}
	replica := replicaFor(t, nodes, master.Options().Addr)

	t.Run("a frozen replica fails its shard only", func(t *testing.T) {
		replica.signal(syscall.SIGSTOP)
		defer replica.signal(syscall.SIGCONT)
		res, err := first.Do(within(t, 10*time.Second), "k", nil, e.fn(nil))
		if runs, _ := e.counts(); res.Outcome != idem.StoreError || !errors.Is(err, redisstore.ErrNotReplicated) || runs != 0 {
			t.Fatalf("key of the frozen replica's shard: %v, %v; effect ran %d times; want StoreError before the effect", res.Outcome, err, runs)
		}
		other := otherShardKey(t, client, store, first, master.Options().Addr)
		if res, err := first.Do(within(t, 10*time.Second), other, nil, e.fn(nil)); res.Outcome != idem.Executed {
			t.Fatalf("key %s of another shard: %v, %v; want Executed", other, res.Outcome, err)
		}
	})

	t.Run("failover of a shard", func(t *testing.T) {
		// The lease left by the refused acquire above is fenced; a new key.
		if res, err := first.Do(within(t, 10*time.Second), "k2", nil, e.fn(nil)); res.Outcome != idem.Executed {
			t.Fatalf("first: %v, %v", res.Outcome, err)
		}
		before, _ := e.counts()
		m, _ := client.MasterForKey(ctx, store.Key(first.StorageKey("k2")))
		r := replicaFor(t, nodes, m.Options().Addr)
		if err := r.client.ClusterFailover(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the replica to take over its shard", 30*time.Second, func() (bool, error) {
			role, err := infoField(r.client, "replication", "role")
			return role == "master", err
		})
		// The cluster client learns the new master from the nodes, which
		// agree on it a moment after the promotion: until then a copy is a
		// StoreError (MOVED after its retries), never a second effect.
		waitFor(t, "the cluster client to route the shard to its new master", 30*time.Second, func() (bool, error) {
			client.ReloadState(ctx) // asynchronous: the loop asks again
			m, err := client.MasterForKey(ctx, store.Key(first.StorageKey("k2")))
			return err == nil && m.Options().Addr == r.addr(), err
		})
		second, _ := guardOn(t, client, redisstore.WithWaitReplicas(1, time.Second))
		res, err := second.Do(within(t, 30*time.Second), "k2", nil, e.fn(nil))
		if runs, _ := e.counts(); res.Outcome != idem.Duplicate || runs != before {
			t.Fatalf("copy after the failover: %v, %v; effect ran %d times, want Duplicate and %d", res.Outcome, err, runs, before)
		}
	})
}

// shardsInSync waits until each shard's replica acknowledges a write (see
// inSync): a cluster's replicas start as any other.
func shardsInSync(t *testing.T, client *redis.ClusterClient) {
	t.Helper()
	synced := make(map[string]bool)
	for i := 0; len(synced) < 3; i++ {
		key := fmt.Sprint("test:in-sync:", i)
		m, err := client.MasterForKey(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		if synced[m.Options().Addr] {
			continue
		}
		waitFor(t, "the replica of "+m.Options().Addr+" to acknowledge a write", 30*time.Second, func() (bool, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			var wait *redis.IntCmd
			_, err := m.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.Incr(ctx, key)
				wait = redis.NewIntCmd(ctx, "wait", 1, 500)
				return p.Process(ctx, wait)
			})
			return err == nil && wait.Val() >= 1, err
		})
		synced[m.Options().Addr] = true
	}
}

// otherShardKey returns a key whose record is on another master than addr.
func otherShardKey(t *testing.T, client *redis.ClusterClient, store *redisstore.Store, g *idem.Guard, addr string) string {
	t.Helper()
	for i := range 100 {
		key := fmt.Sprint("other", i)
		m, err := client.MasterForKey(context.Background(), store.Key(g.StorageKey(key)))
		if err == nil && m.Options().Addr != addr {
			return key
		}
	}
	t.Fatal("no key of another shard in 100")
	return ""
}
