package redisstore_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/redisstore"
)

// The benchmarks run the Guard over a redis-server of their own and report,
// next to ns/op, the round trips per message two ways: the commands the
// client sent (a go-redis hook), and the scripts the server ran (EVALSHA and
// EVAL in INFO commandstats).

// roundTrips is a go-redis hook counting the commands a client sends.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmd)
	}
}

func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmds)
	}
}

// scriptCalls returns how many EVALSHA and EVAL calls the server counted.
func scriptCalls(tb testing.TB, client *redis.Client) int64 {
	tb.Helper()
	info, err := client.InfoMap(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatalf("INFO commandstats: %v", err)
	}
	var n int64
	for _, name := range []string{"cmdstat_evalsha", "cmdstat_eval"} {
		for _, kv := range strings.Split(info["Commandstats"][name], ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				c, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					tb.Fatalf("%s: %q", name, info["Commandstats"][name])
				}
				n += c
			}
		}
	}
	return n
}

type bench struct {
	server *redis.Client // INFO, uncounted
	counts *roundTrips   // the store's client's commands
	guard  *idem.Guard
}

func setupBench(b *testing.B) *bench {
	b.Helper()
	server := startServer(b)
	counts := &roundTrips{}
	client := redis.NewClient(&redis.Options{Addr: server.Options().Addr, ContextTimeoutEnabled: true})
	client.AddHook(counts)
	b.Cleanup(func() { _ = client.Close() })
	store, err := redisstore.New(client)
	if err != nil {
		b.Fatal(err)
	}
	g, err := idem.New(store, "bench")
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("server: %s", serverVersion(b, server))
	return &bench{server: server, counts: counts, guard: g}
}

// measure runs op b.N times and reports round trips and server-side script
// calls per op.
func (e *bench) measure(b *testing.B, op func(i int)) {
	b.Helper()
	calls := scriptCalls(b, e.server)
	sent := e.counts.n.Load()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		op(i)
	}
	b.StopTimer()
	b.ReportMetric(float64(e.counts.n.Load()-sent)/float64(b.N), "roundtrips/op")
	b.ReportMetric(float64(scriptCalls(b, e.server)-calls)/float64(b.N), "scripts/op")
}

var payload = []byte(`{"order":"1234","amount":10}`)

func effect(context.Context) ([]byte, error) { return []byte("gift-card-1"), nil }

func expect(b *testing.B, res idem.Result, err error, want idem.Outcome) {
	if err != nil || res.Outcome != want {
		b.Fatalf("outcome %v (%v), want %v", res.Outcome, err, want)
	}
}

// BenchmarkNewMessage: lease mode, a new key each time: Acquire + Complete,
// one script each.
func BenchmarkNewMessage(b *testing.B) {
	e := setupBench(b)
	ctx := context.Background()
	// The first call of each script on a server is EVALSHA, NOSCRIPT, EVAL:
	// warm the script cache so that the loop measures the steady state.
	res, err := e.guard.Do(ctx, "warm-up", payload, effect)
	expect(b, res, err, idem.Executed)
	e.measure(b, func(i int) {
		res, err := e.guard.Do(ctx, fmt.Sprintf("msg-%d", i), payload, effect)
		expect(b, res, err, idem.Executed)
	})
}

// BenchmarkDuplicate: lease mode, a key already completed: one Acquire
// script that returns the receipt in the way.
func BenchmarkDuplicate(b *testing.B) {
	e := setupBench(b)
	ctx := context.Background()
	res, err := e.guard.Do(ctx, "done", payload, effect)
	expect(b, res, err, idem.Executed)
	e.measure(b, func(int) {
		res, err := e.guard.Do(ctx, "done", payload, effect)
		expect(b, res, err, idem.Duplicate)
	})
}
