package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/redisstore"
)

// put writes n records of namespace ns through store, the first one held.
func put(t *testing.T, store *redisstore.Store, ns string, n int, now time.Time) {
	t.Helper()
	for i := range n {
		key := fmt.Sprintf("%s#%04d", ns, i)
		if i == 0 {
			park(t, store, key, now)
			continue
		}
		if _, ok, err := store.Acquire(within(t, 5*time.Second), acquisition(key, now)); err != nil || !ok {
			t.Fatalf("Acquire %s: %v, %v", key, ok, err)
		}
	}
}

// scanned is what Scan reports for ns: storage key → status.
func scanned(t *testing.T, store *redisstore.Store, ns string) map[string]idem.Status {
	t.Helper()
	got := map[string]idem.Status{}
	err := store.Scan(within(t, 30*time.Second), ns, func(rec idem.Record) error {
		if _, dup := got[rec.Key]; dup {
			t.Errorf("%s reported twice", rec.Key)
		}
		got[rec.Key] = rec.Status
		return nil
	})
	if err != nil {
		t.Fatalf("Scan %s: %v", ns, err)
	}
	return got
}

// TestScan: every record of the namespace, once, over several pages of
// SCAN; not another namespace's, even one whose name the first's pattern
// would match unquoted; not another value under the prefix; not another
// prefix's.
func TestScan(t *testing.T) {
	client := startServer(t)
	store := newStore(t, client)
	now := time.Now()
	const n = 2500 // SCAN looks at about 1000 keys a call
	put(t, store, "orders", n, now)
	put(t, store, "orders2", 3, now)
	put(t, store, "o*", 2, now)
	put(t, store, "o?ders", 2, now)
	put(t, newStore(t, client, redisstore.WithPrefix("other:")), "orders", 3, now)
	ctx := within(t, 5*time.Second)
	client.Set(ctx, store.Key("orders#not-a-hash"), "x", 0)
	client.HSet(ctx, "orders#0001", "status", "COMPLETED") // no prefix

	got := scanned(t, store, "orders")
	if len(got) != n || got["orders#0000"] != idem.StatusHeld || got["orders#0001"] != idem.StatusInProgress {
		t.Fatalf("Scan orders: %d records (held %q, in progress %q); want %d", len(got), got["orders#0000"], got["orders#0001"], n)
	}
	for ns, want := range map[string]int{"o*": 2, "o?ders": 2, "orders2": 3, "none": 0} {
		if got := scanned(t, store, ns); len(got) != want {
			t.Errorf("Scan %s: %d records; want %d", ns, len(got), want)
		}
	}

	// An error of fn stops the scan.
	errStop := errors.New("enough")
	calls := 0
	err := store.Scan(within(t, 30*time.Second), "orders", func(idem.Record) error { calls++; return errStop })
	if !errors.Is(err, errStop) || calls != 1 {
		t.Errorf("Scan stopped by fn: %v after %d calls; want fn's error after 1", err, calls)
	}
	if err := store.Scan(t.Context(), "a#b", func(idem.Record) error { return nil }); !errors.Is(err, idem.ErrInvalid) {
		t.Errorf("Scan of a namespace with %q: %v; want ErrInvalid", idem.KeySeparator, err)
	}
}

// evalOnly is a Client that can only run scripts.
type evalOnly struct{ *redis.Client }

func (c evalOnly) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return c.Client.Eval(ctx, script, keys, args...)
}

func (c evalOnly) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	return c.Client.EvalSha(ctx, sha, keys, args...)
}

// TestScanNeedsSCAN: a Client without SCAN is refused, not half-read.
func TestScanNeedsSCAN(t *testing.T) {
	store, err := redisstore.New(struct{ redisstore.Client }{evalOnly{redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})}})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Scan(t.Context(), "orders", func(idem.Record) error { return nil }); !errors.Is(err, idem.ErrInvalid) {
		t.Fatalf("Scan: %v; want ErrInvalid", err)
	}
}
