package redismodel_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/redisstore"

	"github.com/exactlyonce/sqsidem/integration/sim/redismodel"
)

// TestDifferential drives the real redisstore.Store against a real server
// through seeded random sequences of acquires, completes, releases and
// reads, records every request and reply, and replays them on a fresh
// model: every reply and the final keyspace must agree. Each sequence has
// three phases: memory free, out of memory (maxmemory 1 with noeviction
// on the server, SetOOM on the model), and free again.
func TestDifferential(t *testing.T) {
	client := startServer(t)
	seeds := 12
	if testing.Short() {
		seeds = 3
	}
	total := 0
	for seed := range uint64(seeds) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := client.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if err := client.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		cancel()
		model := redismodel.New(time.Now)
		d := newDriver(seed)
		for _, phase := range []struct {
			oom bool
			ops int
		}{{false, 100}, {true, 40}, {false, 40}} {
			setOOM(t, client, phase.oom)
			calls := d.run(t, client, phase.ops)
			model.SetOOM(phase.oom)
			replay(t, calls, model)
			total += len(calls)
		}
		sameKeyspace(t, client, model)
		if t.Failed() {
			t.Fatalf("seed %d: the model differs from the server", seed)
		}
	}
	t.Logf("%d calls compared", total)
}

// driver makes a random sequence of Store operations on a few keys, with
// a clock of its own: times far in the future, so that the server's clock
// never expires a key the model keeps, and expiries far in the past now
// and then, which both delete at once.
type driver struct {
	rng    *rand.Rand
	now    time.Time
	leases map[string][]string // by key, oldest first
	holder map[string]string   // by key, the lease of the last acquire that took it
	n      int
}

var keys = []string{"a", "b", "c", "key with spaces", "ключ"}

func newDriver(seed uint64) *driver {
	return &driver{
		rng:    rand.New(rand.NewPCG(seed, 16)),
		now:    time.Date(2090, 1, 1, 0, 0, 0, 0, time.UTC),
		leases: map[string][]string{},
		holder: map[string]string{},
	}
}

// run performs ops operations through a recording client of the server
// and returns the calls.
func (d *driver) run(t *testing.T, client *redis.Client, ops int) []redismodel.Call {
	t.Helper()
	var calls []redismodel.Call
	store, err := redisstore.New(redismodel.Recording(client, func(c redismodel.Call) { calls = append(calls, c) }))
	if err != nil {
		t.Fatal(err)
	}
	for range ops {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		d.step(ctx, store)
		cancel()
	}
	return calls
}

// step performs one operation, twice in a row now and then, as a retry
// after a lost reply sends it. Errors are the server's replies, which the
// replay compares; the Store's own verdicts follow from them.
func (d *driver) step(ctx context.Context, store *redisstore.Store) {
	d.now = d.now.Add(time.Duration(d.rng.IntN(3000)) * time.Millisecond)
	if d.rng.IntN(10) == 0 {
		d.now = d.now.Add(time.Duration(d.rng.IntN(30)) * time.Second) // past some leases
	}
	key := keys[d.rng.IntN(len(keys))]
	times := 1
	if d.rng.IntN(5) == 0 {
		times = 2
	}
	switch r := d.rng.IntN(100); {
	case r < 40:
		d.n++
		lease := fmt.Sprintf("lease-%d", d.n)
		d.leases[key] = append(d.leases[key], lease)
		a := idem.Acquisition{
			Key: key, Lease: lease, Now: d.now,
			LeaseUntil:  d.now.Add(time.Duration(1+d.rng.IntN(20)) * time.Second),
			ExpiresAt:   d.expiry(),
			Fingerprint: []string{"", "fp-a", "fp-b"}[d.rng.IntN(3)],
		}
		for range times {
			if _, ok, err := store.Acquire(ctx, a); ok && err == nil {
				d.holder[key] = lease
			}
		}
	case r < 70:
		c := idem.Completion{Result: d.result(), ExpiresAt: d.expiry(), Now: d.now}
		if len(c.Result) == 0 && d.rng.IntN(3) == 0 {
			c.ResultOmitted = true
		}
		lease := d.lease(key)
		for range times {
			_ = store.Complete(ctx, key, lease, c)
		}
	case r < 85:
		lease, reason := d.lease(key), []string{"", "boom", "timeout\nwith a newline"}[d.rng.IntN(3)]
		for range times {
			_ = store.Release(ctx, key, lease, idem.Released{Status: idem.StatusFailed, Reason: reason, Now: d.now})
		}
	default:
		_, _, _ = store.Get(ctx, key)
	}
}

// expiry is none, soon, much later, or long past.
func (d *driver) expiry() time.Time {
	switch d.rng.IntN(6) {
	case 0:
		return time.Time{}
	case 1:
		return time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(d.rng.IntN(1000)) * time.Second)
	case 2:
		return d.now.Add(time.Duration(d.rng.IntN(5000)) * time.Millisecond)
	}
	return d.now.Add(time.Duration(1+d.rng.IntN(48)) * time.Hour)
}

// lease is the lease of the key's last taker mostly, another lease of the
// key or a stranger's now and then.
func (d *driver) lease(key string) string {
	ls := d.leases[key]
	switch r := d.rng.IntN(10); {
	case len(ls) == 0 || r == 0:
		return "lease-unknown"
	case r < 3 || d.holder[key] == "":
		return ls[d.rng.IntN(len(ls))]
	}
	return d.holder[key]
}

// result has a size around Redis's limits for a compact hash (64 bytes a
// value), or well past them.
func (d *driver) result() []byte {
	n := []int{0, 1, 10, 63, 64, 65, 200, 3000}[d.rng.IntN(8)]
	return []byte(strings.Repeat(string(rune('a'+d.rng.IntN(26))), n))
}
