package redisstore_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
	"github.com/exactlyonce/sqsidem/pkg/idem/redisstore"
)

// The tests against a real redis-server, which each test starts itself.

func newStore(t testing.TB, client *redis.Client, opts ...redisstore.Option) *redisstore.Store {
	t.Helper()
	s, err := redisstore.New(client, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	client := startServer(t)
	t.Logf("server: %s", serverVersion(t, client))
	store := newStore(t, client)
	idemtest.TestStore(t, func(*testing.T) idem.Store { return store })
}

// An acquisition of a fresh key at now.
func acquisition(key string, now time.Time) idem.Acquisition {
	return idem.Acquisition{
		Key: key, Lease: "lease-1", LeaseUntil: now.Add(time.Minute),
		ExpiresAt: now.Add(time.Hour), Fingerprint: "fp", Now: now,
	}
}

// expireTime returns the key's absolute expiry (PEXPIRETIME) and checks
// that its PTTL is positive.
func expireTime(t *testing.T, client *redis.Client, key string) time.Time {
	t.Helper()
	ctx := context.Background()
	if ttl, err := client.PTTL(ctx, key).Result(); err != nil || ttl <= 0 {
		t.Fatalf("PTTL %s = %v, %v; want > 0", key, ttl, err)
	}
	ms, err := client.Do(ctx, "PEXPIRETIME", key).Int64()
	if err != nil {
		t.Fatalf("PEXPIRETIME %s: %v", key, err)
	}
	return time.UnixMilli(ms)
}

// TestTTL: the key's TTL is the record's expiresAt, set by Acquire, moved by
// Complete, kept by Release.
func TestTTL(t *testing.T) {
	client := startServer(t)
	store := newStore(t, client)
	ctx := context.Background()
	now := time.Now()

	a := acquisition("ns#ttl", now)
	if _, ok, err := store.Acquire(ctx, a); err != nil || !ok {
		t.Fatalf("Acquire: %v, %v", ok, err)
	}
	key := store.Key(a.Key)
	if got := expireTime(t, client, key); !got.Equal(a.ExpiresAt.Truncate(time.Millisecond)) {
		t.Fatalf("after Acquire the key expires at %v, want the record's expiresAt %v", got, a.ExpiresAt)
	}
	later := now.Add(48 * time.Hour)
	if err := store.Complete(ctx, a.Key, a.Lease, idem.Completion{Result: []byte("r"), ExpiresAt: later, Now: now}); err != nil {
		t.Fatal(err)
	}
	if got := expireTime(t, client, key); !got.Equal(later.Truncate(time.Millisecond)) {
		t.Fatalf("after Complete the key expires at %v, want %v", got, later)
	}

	b := acquisition("ns#ttl-release", now)
	if _, ok, err := store.Acquire(ctx, b); err != nil || !ok {
		t.Fatalf("Acquire: %v, %v", ok, err)
	}
	if err := store.Release(ctx, b.Key, b.Lease, idem.Released{Status: idem.StatusFailed, Reason: "boom", Now: now}); err != nil {
		t.Fatal(err)
	}
	if got := expireTime(t, client, store.Key(b.Key)); !got.Equal(b.ExpiresAt.Truncate(time.Millisecond)) {
		t.Fatalf("after Release the key expires at %v, want it kept at %v", got, b.ExpiresAt)
	}
}

// TestExpiredCountsAsAbsent: a record whose expiresAt passed by the
// caller's clock is taken like an absent one, while Redis still holds it
// (its TTL runs by the server's clock), and attempts goes on from it as in
// the memory store.
func TestExpiredCountsAsAbsent(t *testing.T) {
	client := startServer(t)
	store := newStore(t, client)
	ctx := context.Background()
	now := time.Now()
	a := acquisition("ns#expired", now)
	if _, ok, err := store.Acquire(ctx, a); err != nil || !ok {
		t.Fatalf("Acquire: %v, %v", ok, err)
	}
	if err := store.Complete(ctx, a.Key, a.Lease, idem.Completion{Result: []byte("r"), ExpiresAt: a.ExpiresAt, Now: now}); err != nil {
		t.Fatal(err)
	}

	b := acquisition(a.Key, a.ExpiresAt.Add(-time.Millisecond))
	b.Lease = "lease-2"
	rec, ok, err := store.Acquire(ctx, b)
	if err != nil || ok || rec.Status != idem.StatusCompleted || string(rec.Result) != "r" {
		t.Fatalf("Acquire before expiresAt: %+v, %v, %v; want the receipt in the way", rec, ok, err)
	}

	c := acquisition(a.Key, a.ExpiresAt.Add(time.Millisecond))
	c.Lease = "lease-3"
	if n, err := client.Exists(ctx, store.Key(a.Key)).Result(); err != nil || n != 1 {
		t.Fatalf("EXISTS before the second acquire: %d, %v; the server should still hold the record", n, err)
	}
	rec, ok, err = store.Acquire(ctx, c)
	if err != nil || !ok {
		t.Fatalf("Acquire after expiresAt: %+v, %v, %v; want acquired", rec, ok, err)
	}
	if rec.Attempts != 2 || rec.Lease != "lease-3" || rec.Status != idem.StatusInProgress || rec.Result != nil {
		t.Fatalf("record taken over from the expired one: %+v; want attempt 2, no result", rec)
	}
}

// TestEvictedIsLeaseLost: a record Redis evicted is absent: Complete and
// Release are fenced out, and a new acquire starts at attempt 1.
func TestEvictedIsLeaseLost(t *testing.T) {
	client := startServer(t)
	store := newStore(t, client)
	ctx := context.Background()
	a := acquisition("ns#evicted", time.Now())
	if _, ok, err := store.Acquire(ctx, a); err != nil || !ok {
		t.Fatalf("Acquire: %v, %v", ok, err)
	}
	if err := client.Del(ctx, store.Key(a.Key)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := store.Complete(ctx, a.Key, a.Lease, idem.Completion{ExpiresAt: a.ExpiresAt, Now: a.Now}); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("Complete of an evicted record: %v, want ErrLeaseLost", err)
	}
	if err := store.Release(ctx, a.Key, a.Lease, idem.Released{Status: idem.StatusFailed, Reason: "x", Now: a.Now}); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("Release of an evicted record: %v, want ErrLeaseLost", err)
	}
	if rec, ok, err := store.Acquire(ctx, a); err != nil || !ok || rec.Attempts != 1 {
		t.Fatalf("Acquire after eviction: %+v, %v, %v; want attempt 1", rec, ok, err)
	}
}

// TestRecordLayout: the hash holds the fields the package documentation
// lists, under the prefixed key, and a script flushed from the server's
// cache is loaded again (NOSCRIPT, then EVAL).
func TestRecordLayout(t *testing.T) {
	client := startServer(t)
	store := newStore(t, client, redisstore.WithPrefix("app:idem:"))
	ctx := context.Background()
	now := time.UnixMilli(time.Now().UnixMilli())
	a := acquisition("ns#layout", now)
	if _, ok, err := store.Acquire(ctx, a); err != nil || !ok {
		t.Fatalf("Acquire: %v, %v", ok, err)
	}
	if err := client.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := store.Complete(ctx, a.Key, a.Lease, idem.Completion{ResultOmitted: true, ExpiresAt: a.ExpiresAt, Now: now}); err != nil {
		t.Fatalf("Complete after SCRIPT FLUSH: %v", err)
	}
	got, err := client.HGetAll(ctx, "app:idem:ns#layout").Result()
	if err != nil {
		t.Fatal(err)
	}
	ms := func(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
	want := map[string]string{
		"status":        "COMPLETED",
		"lease":         a.Lease,
		"leaseUntil":    ms(a.LeaseUntil),
		"expiresAt":     ms(a.ExpiresAt),
		"attempts":      "1",
		"fingerprint":   "fp",
		"resultOmitted": "1",
		"updatedAt":     ms(now),
	}
	if len(got) != len(want) {
		t.Fatalf("hash %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("field %s = %q, want %q (hash %v)", k, got[k], v, got)
		}
	}
	rec, found, err := store.Get(ctx, a.Key)
	if err != nil || !found || rec.Key != a.Key || !rec.ResultOmitted || !rec.LeaseUntil.Equal(a.LeaseUntil) {
		t.Fatalf("Get: %+v, %v, %v", rec, found, err)
	}
}

// TestRoundTrips: one round trip per store call, as the benchmarks measure:
// two per new message, one per duplicate, two per failed attempt.
func TestRoundTrips(t *testing.T) {
	server := startServer(t)
	counts := &roundTrips{}
	client := redis.NewClient(&redis.Options{Addr: server.Options().Addr, ContextTimeoutEnabled: true})
	client.AddHook(counts)
	t.Cleanup(func() { _ = client.Close() })
	g, err := idem.New(newStore(t, client), "rt")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	value := func(context.Context) ([]byte, error) { return []byte("v"), nil }
	boom := func(context.Context) ([]byte, error) { return nil, errors.New("boom") }
	// The first call of each script on a server costs EVALSHA, NOSCRIPT, EVAL.
	_, _ = g.Do(ctx, "warm-up-fail", nil, boom)
	_, _ = g.Do(ctx, "warm-up", nil, value)

	for _, tc := range []struct {
		name string
		key  string
		fn   idem.Func
		want idem.Outcome
		trip int64
	}{
		{"new message", "k", value, idem.Executed, 2},
		{"duplicate", "k", value, idem.Duplicate, 1},
		{"failed effect", "f", boom, idem.Failed, 2},
		{"retry after failure", "f", value, idem.Rerun, 2}, // boom is not definite
	} {
		before, calls := counts.n.Load(), scriptCalls(t, server)
		res, _ := g.Do(ctx, tc.key, []byte("p"), tc.fn)
		sent, ran := counts.n.Load()-before, scriptCalls(t, server)-calls
		if res.Outcome != tc.want || sent != tc.trip || ran != tc.trip {
			t.Errorf("%s: %v after %d round trips (%d scripts on the server), want %v after %d", tc.name, res.Outcome, sent, ran, tc.want, tc.trip)
		}
	}
}
