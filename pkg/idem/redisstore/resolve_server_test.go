package redisstore_test

import (
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/redisstore"
)

// Store.Resolve against a real redis-server: what an operator writes
// (idemctl resolve), fenced by the whole record as it was read.

// park leaves key's record HELD, as a Guard under WithUnknownOutcome(Hold)
// does: an attempt took it and released it held. It returns the record.
func park(t *testing.T, store *redisstore.Store, key string, now time.Time) idem.Record {
	t.Helper()
	ctx := within(t, 5*time.Second)
	a := acquisition(key, now)
	a.Lease = "zombie"
	if _, ok, err := store.Acquire(ctx, a); err != nil || !ok {
		t.Fatalf("Acquire %s: %v, %v", key, ok, err)
	}
	if err := store.Release(ctx, key, a.Lease, idem.Released{Status: idem.StatusHeld, Reason: "unknown outcome", Now: now}); err != nil {
		t.Fatalf("Release %s HELD: %v", key, err)
	}
	rec, found, err := store.Get(ctx, key)
	if err != nil || !found || rec.Status != idem.StatusHeld || !rec.ExpiresAt.IsZero() {
		t.Fatalf("parked %s: %+v, %v, %v", key, rec, found, err)
	}
	return rec
}

// TestResolveHeld: a held key, which has no TTL, settled either way: the
// receipt keeps no result and says it is an operator's, under a token of
// its own; the release keeps the token. Both get the expiry, as field and
// as TTL, and keep the attempts.
func TestResolveHeld(t *testing.T) {
	client := startServer(t)
	store := newStore(t, client)
	now := time.Now()
	expires := now.Add(7 * 24 * time.Hour).Truncate(time.Millisecond)
	for _, to := range []idem.Status{idem.StatusCompleted, idem.StatusFailed} {
		t.Run(string(to), func(t *testing.T) {
			key := "ns#" + string(to)
			old := park(t, store, key, now)
			later := now.Add(time.Minute)
			rec, changed, err := store.Resolve(within(t, 5*time.Second), key, old, to, expires, later)
			if err != nil || changed {
				t.Fatalf("Resolve: changed %v, %v", changed, err)
			}
			stored, _, err := store.Get(within(t, 5*time.Second), key)
			if err != nil || !reflect.DeepEqual(stored, rec) {
				t.Fatalf("Resolve returned %+v, the store holds %+v (%v)", rec, stored, err)
			}
			done := to == idem.StatusCompleted
			if rec.Status != to || rec.Attempts != old.Attempts || !rec.ExpiresAt.Equal(expires) || !rec.UpdatedAt.Equal(later.Truncate(time.Millisecond)) ||
				rec.Resolved != done || rec.ResultOmitted != done || rec.Result != nil ||
				strings.HasPrefix(rec.Lease, "idemctl-") != done || (rec.Lease == old.Lease) == done {
				t.Fatalf("resolved to %s: %+v (was %+v)", to, rec, old)
			}
			if !done && !strings.Contains(rec.LastError, "--not-done") {
				t.Errorf("released: last error %q", rec.LastError)
			}
			if got := expireTime(t, client, store.Key(key)); !got.Equal(expires) {
				t.Errorf("TTL: the key expires at %v, want %v", got, expires)
			}
		})
	}

	t.Run("a copy is a Duplicate of an operator's receipt", func(t *testing.T) {
		g, err := idem.New(store, "ns", idem.WithUnknownOutcome(idem.Hold))
		if err != nil {
			t.Fatal(err)
		}
		key := g.StorageKey("order-1")
		old := park(t, store, key, now)
		if _, _, err := store.Resolve(within(t, 5*time.Second), key, old, idem.StatusCompleted, expires, now); err != nil {
			t.Fatal(err)
		}
		res, err := g.Do(within(t, 5*time.Second), "order-1", nil, func(context.Context) ([]byte, error) {
			t.Error("the effect ran over a receipt")
			return nil, nil
		})
		if err != nil || res.Outcome != idem.Duplicate || !res.Resolved || !res.ResultOmitted {
			t.Fatalf("copy: %+v, %v; want a Duplicate, Resolved and ResultOmitted", res, err)
		}
	})
}

// TestResolvedOnlyOnItsReceipt: once the operator's receipt expired, the
// acquire that takes the record and the receipt it writes are not the
// operator's, though the scripts of an attempt leave the resolved field.
func TestResolvedOnlyOnItsReceipt(t *testing.T) {
	store := newStore(t, startServer(t))
	now := time.Now()
	old := park(t, store, "ns#k", now)
	if _, _, err := store.Resolve(within(t, 5*time.Second), "ns#k", old, idem.StatusCompleted, now.Add(time.Hour), now); err != nil {
		t.Fatal(err)
	}
	// By the caller's clock, two hours later: the receipt expired; the
	// server's clock has not evicted it.
	later := now.Add(2 * time.Hour)
	a := acquisition("ns#k", later)
	rec, ok, err := store.Acquire(within(t, 5*time.Second), a)
	if err != nil || !ok || rec.Resolved {
		t.Fatalf("Acquire over the expired receipt: %+v, %v, %v; want taken, not Resolved", rec, ok, err)
	}
	if err := store.Complete(within(t, 5*time.Second), a.Key, a.Lease, idem.Completion{Result: []byte("r"), ExpiresAt: later.Add(time.Hour), Now: later}); err != nil {
		t.Fatal(err)
	}
	if rec, _, err := store.Get(within(t, 5*time.Second), "ns#k"); err != nil || rec.Resolved || string(rec.Result) != "r" {
		t.Fatalf("the attempt's receipt: %+v, %v; want its result, not Resolved", rec, err)
	}
}

// TestResolveFenced: a record that changed since the operator read it is
// returned as it is now, and nothing is written: the late receipt of the
// attempt that held it (same token), a copy that took it over, any touch;
// a record that is gone is the zero record.
func TestResolveFenced(t *testing.T) {
	client := startServer(t)
	store := newStore(t, client)
	now := time.Now()
	for _, tc := range []struct {
		name   string
		old    func(key string) idem.Record
		change func(t *testing.T, key string)
	}{
		{"late receipt, same token", func(key string) idem.Record { return park(t, store, key, now) }, func(t *testing.T, key string) {
			if err := store.Complete(within(t, 5*time.Second), key, "zombie", idem.Completion{Result: []byte("late"), ExpiresAt: now.Add(time.Hour), Now: now.Add(time.Second)}); err != nil {
				t.Fatal(err)
			}
		}},
		{"a live attempt took it over", func(key string) idem.Record {
			// In progress, its lease ended: the operator reads it as
			// unconfirmed, then a copy takes it.
			a := acquisition(key, now.Add(-time.Hour))
			a.Lease = "zombie"
			rec, _, err := store.Acquire(within(t, 5*time.Second), a)
			if err != nil {
				t.Fatal(err)
			}
			return rec
		}, func(t *testing.T, key string) {
			a := acquisition(key, now)
			a.Lease = "copy"
			if _, ok, err := store.Acquire(within(t, 5*time.Second), a); err != nil || !ok {
				t.Fatalf("the copy's Acquire: %v, %v", ok, err)
			}
		}},
		{"touched", func(key string) idem.Record { return park(t, store, key, now) }, func(t *testing.T, key string) {
			client.HSet(within(t, 5*time.Second), store.Key(key), "updatedAt", now.Add(time.Millisecond).UnixMilli())
		}},
		{"attempts", func(key string) idem.Record { return park(t, store, key, now) }, func(t *testing.T, key string) {
			client.HIncrBy(within(t, 5*time.Second), store.Key(key), "attempts", 1)
		}},
		{"gone", func(key string) idem.Record { return park(t, store, key, now) }, func(t *testing.T, key string) {
			client.Del(within(t, 5*time.Second), store.Key(key))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "ns#" + strings.ReplaceAll(tc.name, " ", "-")
			old := tc.old(key)
			tc.change(t, key)
			before, err := client.HGetAll(within(t, 5*time.Second), store.Key(key)).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, to := range []idem.Status{idem.StatusCompleted, idem.StatusFailed} {
				rec, changed, err := store.Resolve(within(t, 5*time.Second), key, old, to, now.Add(time.Hour), now.Add(time.Minute))
				after, _ := client.HGetAll(within(t, 5*time.Second), store.Key(key)).Result()
				if err != nil || !changed || !reflect.DeepEqual(before, after) {
					t.Fatalf("Resolve %s: changed %v, %v; hash %v, was %v: want changed, nothing written", to, changed, err, after, before)
				}
				cur, found, _ := store.Get(within(t, 5*time.Second), key)
				if !found {
					cur = idem.Record{} // gone: the zero record
				}
				if !reflect.DeepEqual(rec, cur) {
					t.Fatalf("Resolve %s returned %+v; the record is %+v", to, rec, cur)
				}
			}
		})
	}
}

// TestResolveAtOnce: operators resolving one record at once write once,
// whatever each decided: one is written, the others find it changed and
// are returned the winner's record.
func TestResolveAtOnce(t *testing.T) {
	store := newStore(t, startServer(t))
	now := time.Now()
	old := park(t, store, "ns#k", now)
	const n = 8
	type answer struct {
		rec     idem.Record
		changed bool
		err     error
	}
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for i := range n {
		to := idem.StatusCompleted
		if i%2 == 1 {
			to = idem.StatusFailed
		}
		wg.Go(func() {
			// Each its own clock, as operators on two machines.
			rec, changed, err := store.Resolve(within(t, 10*time.Second), "ns#k", old, to, now.Add(time.Hour), now.Add(time.Duration(i+1)*time.Millisecond))
			answers[i] = answer{rec, changed, err}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("waited 30s for the resolves to return")
	}
	var winners []answer
	for i, a := range answers {
		if a.err != nil {
			t.Fatalf("resolve %d: %v", i, a.err)
		}
		if !a.changed {
			winners = append(winners, a)
		}
	}
	if len(winners) != 1 {
		t.Fatalf("%d resolves wrote; want 1: %+v", len(winners), answers)
	}
	final, _, err := store.Get(within(t, 5*time.Second), "ns#k")
	if err != nil || !reflect.DeepEqual(final, winners[0].rec) {
		t.Fatalf("the record is %+v (%v); the winner wrote %+v", final, err, winners[0].rec)
	}
	for i, a := range answers {
		if a.changed && !reflect.DeepEqual(a.rec, final) {
			t.Errorf("resolve %d was told the record is %+v; it is %+v", i, a.rec, final)
		}
	}
}

// lossy runs the first script with nine arguments (resolve's) and loses
// its answer, as a connection reset after the server replied would.
type lossy struct {
	*redis.Client
	mu   sync.Mutex
	lost bool
}

func (c *lossy) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	cmd := c.Client.EvalSha(ctx, sha, keys, args...)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(args) == 9 && !c.lost && cmd.Err() == nil {
		c.lost = true
		lost := redis.NewCmd(ctx)
		lost.SetErr(io.ErrUnexpectedEOF)
		return lost
	}
	return cmd
}

// TestResolveRetriedAfterItLanded: the retry of a write whose answer was
// lost finds the record it wrote, and reports it written.
func TestResolveRetriedAfterItLanded(t *testing.T) {
	client := startServer(t)
	store := newStore(t, client)
	now := time.Now()
	old := park(t, store, "ns#k", now)
	c := &lossy{Client: client}
	lossyStore, err := redisstore.New(c)
	if err != nil {
		t.Fatal(err)
	}
	// Cache the script, so that the first call is the EVALSHA that lands.
	if _, _, err := lossyStore.Resolve(within(t, 5*time.Second), "ns#other", old, idem.StatusCompleted, now.Add(time.Hour), now); err != nil {
		t.Fatal(err)
	}
	c.lost = false
	rec, changed, err := lossyStore.Resolve(within(t, 5*time.Second), "ns#k", old, idem.StatusCompleted, now.Add(time.Hour), now.Add(time.Minute))
	if err != nil || changed || rec.Status != idem.StatusCompleted || !rec.Resolved || !c.lost {
		t.Fatalf("Resolve with its answer lost: %+v, changed %v, %v (lost: %v); want written", rec, changed, err, c.lost)
	}
}

// TestResolveRefuses what it cannot write, before any request.
func TestResolveRefuses(t *testing.T) {
	store := newStore(t, startServer(t))
	old := idem.Record{Key: "ns#k", Status: idem.StatusHeld, Lease: "l", Attempts: 1}
	for name, tc := range map[string]struct {
		to      idem.Status
		expires time.Time
	}{
		"to HELD":               {idem.StatusHeld, time.Now()},
		"held, without expires": {idem.StatusFailed, time.Time{}},
	} {
		if _, _, err := store.Resolve(within(t, 5*time.Second), "ns#k", old, tc.to, tc.expires, time.Now()); !errors.Is(err, idem.ErrInvalid) {
			t.Errorf("%s: %v; want ErrInvalid", name, err)
		}
	}
}
