package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// outOfMemory makes the server refuse what grows memory, as a full server
// with maxmemory-policy noeviction does: used memory is always above 1 byte.
func outOfMemory(t *testing.T, client *redis.Client, on bool) {
	t.Helper()
	ctx := context.Background()
	limit := "0" // no limit
	if on {
		limit = "1"
	}
	if err := client.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	if err := client.ConfigSet(ctx, "maxmemory", limit).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestOutOfMemoryBeforeTheEffect: a server out of memory (noeviction)
// refuses the acquire, so the effect does not run and the caller is told
// StoreError. The old acquire script's first write was HDEL, which Redis
// lets through when out of memory, and after a first write a script's
// other writes go through too: the lease was taken, the effect ran, and the
// receipt, whose script's first write is HSET, was refused — Unconfirmed,
// and a copy after the lease ran the effect again.
func TestOutOfMemoryBeforeTheEffect(t *testing.T) {
	client := startServer(t)
	store := newStore(t, client)
	g, err := idem.New(store, "oom")
	if err != nil {
		t.Fatal(err)
	}
	outOfMemory(t, client, true)
	ran := 0
	res, err := g.Do(context.Background(), "k", nil, func(context.Context) ([]byte, error) { ran++; return []byte("v"), nil })
	if ran != 0 || res.Outcome != idem.StoreError || !errors.Is(err, idem.ErrStore) {
		t.Fatalf("out of memory: %+v, %v, effect ran %d times; want StoreError before the effect", res, err, ran)
	}
}

// TestReceiptLandsOutOfMemory: once the lease is taken the receipt must
// land, memory or not: a receipt refused is a possible second effect.
func TestReceiptLandsOutOfMemory(t *testing.T) {
	client := startServer(t)
	store := newStore(t, client)
	g, err := idem.New(store, "oom", idem.WithLease(10*time.Second), idem.WithSafetyMargin(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := g.Do(ctx, "k", nil, func(context.Context) ([]byte, error) {
		outOfMemory(t, client, true) // the server fills up while the effect runs
		return []byte("v"), nil
	})
	if err != nil || res.Outcome != idem.Executed {
		t.Fatalf("receipt while out of memory: %+v, %v; want Executed", res, err)
	}
	rec, found, err := store.Get(ctx, g.StorageKey("k"))
	if err != nil || !found || rec.Status != idem.StatusCompleted || string(rec.Result) != "v" {
		t.Fatalf("record %+v, %v, %v; want the receipt", rec, found, err)
	}
	// A duplicate is answered while out of memory: its acquire writes nothing.
	if res, err := g.Do(ctx, "k", nil, func(context.Context) ([]byte, error) { return nil, nil }); res.Outcome != idem.StoreError && res.Outcome != idem.Duplicate {
		t.Fatalf("duplicate while out of memory: %+v, %v", res, err)
	}
	outOfMemory(t, client, false)
}
