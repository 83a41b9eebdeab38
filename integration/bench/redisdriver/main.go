// Command redisdriver is the pkg/idem + redisstore side of `make bench`: the
// Go driver's lease-new and lease-dup scenarios (integration/bench/godriver)
// on Redis instead of DynamoDB, with the same flags and JSON. --endpoint is
// a redis:// URL; --table names the run, and becomes the prefix of its keys.
// "requests" are round trips, counted by a go-redis hook.
//
//	redisdriver lease-new|lease-dup --endpoint redis://127.0.0.1:PORT --table NAME [-n N] [-w W] [--validation on|off]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/integration/bench/internal/driver"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/redisstore"
)

// roundTrips counts the commands and pipelines the client sends.
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

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "lease-new" && os.Args[1] != "lease-dup") {
		fmt.Fprintln(os.Stderr, "usage: redisdriver lease-new|lease-dup --endpoint redis://HOST:PORT --table NAME [-n N] [-w W] [--validation on|off]")
		os.Exit(2)
	}
	scenario := os.Args[1]
	fs := flag.NewFlagSet("redisdriver", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	endpoint := fs.String("endpoint", "", "redis:// URL")
	table := fs.String("table", "", "name of the run (key prefix)")
	var n, w int
	fs.IntVar(&n, "n", 1000, "keys")
	fs.IntVar(&n, "messages", 1000, "keys")
	fs.IntVar(&w, "w", 1, "workers")
	fs.IntVar(&w, "workers", 1, "workers")
	validation := fs.String("validation", "on", "payload fingerprint: on or off")
	if err := fs.Parse(os.Args[2:]); err != nil || *endpoint == "" || *table == "" || n < 1 || w < 1 {
		fmt.Fprintf(os.Stderr, "redisdriver: bad usage: %v\n", err)
		os.Exit(2)
	}
	out, err := run(scenario, *endpoint, *table, n, w, *validation == "on")
	if err != nil {
		fmt.Fprintf(os.Stderr, "redisdriver: %v\n", err)
		os.Exit(2)
	}
	b, _ := json.Marshal(out)
	os.Stdout.Write(append(b, '\n'))
	if !out.OK {
		os.Exit(1)
	}
}

func run(scenario, endpoint, table string, n, w int, validation bool) (driver.Result, error) {
	ctx := context.Background()
	opts, err := redis.ParseURL(endpoint)
	if err != nil {
		return driver.Result{}, err
	}
	opts.PoolSize = w // as many connections as workers, as on the DynamoDB side
	client := redis.NewClient(opts)
	defer client.Close()
	trips := &roundTrips{}
	client.AddHook(trips)
	store, err := redisstore.New(client, redisstore.WithPrefix("idem:"+table+":"))
	if err != nil {
		return driver.Result{}, err
	}
	guard, err := idem.New(store, "bench")
	if err != nil {
		return driver.Result{}, err
	}
	var (
		mu    sync.Mutex
		calls = map[string]int{}
	)
	call := func(body string, want idem.Outcome) error {
		var o struct {
			OrderID     string `json:"orderId"`
			AmountCents int    `json:"amountCents"`
		}
		if err := json.Unmarshal([]byte(body), &o); err != nil || o.OrderID == "" {
			return fmt.Errorf("no orderId in %q: %v", body, err)
		}
		var payload []byte
		if validation {
			payload = []byte(body)
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second) // an invocation's time left: the lease
		defer cancel()
		res, err := guard.Do(cctx, o.OrderID, payload, func(context.Context) ([]byte, error) {
			mu.Lock()
			calls[o.OrderID]++
			mu.Unlock()
			return json.Marshal(map[string]any{"giftCard": "gc-" + o.OrderID, "amountCents": o.AmountCents})
		})
		switch {
		case err != nil:
			return err
		case res.Outcome != want:
			return fmt.Errorf("%s: outcome %v, want %v", o.OrderID, res.Outcome, want)
		case !bytes.Contains(res.Value, []byte(`"gc-`+o.OrderID+`"`)):
			return fmt.Errorf("%s: result %q", o.OrderID, res.Value)
		}
		return nil
	}
	bodies := func(infix string, count int) []string {
		out := make([]string, count)
		for i := range out {
			out[i] = fmt.Sprintf(`{"orderId":"%s-%s%07d","customer":"c-1","amountCents":1234}`, table, infix, i)
		}
		return out
	}
	warm := bodies("warm-", w)
	if errs, first := pool(w, warm, call, idem.Executed); errs > 0 {
		return driver.Result{}, fmt.Errorf("warm-up: %v", first)
	}
	if errs, first := pool(w, warm, call, idem.Duplicate); errs > 0 {
		return driver.Result{}, fmt.Errorf("warm-up: %v", first)
	}
	msgs := bodies("", n)
	want := idem.Executed
	if scenario == "lease-dup" {
		if errs, first := pool(w, msgs, call, idem.Executed); errs > 0 {
			return driver.Result{}, fmt.Errorf("seeding: %v", first)
		}
		want = idem.Duplicate
	}
	mu.Lock()
	calls = map[string]int{}
	mu.Unlock()

	trips0, cpu0, start := trips.n.Load(), driver.CPUSeconds(), time.Now()
	errs, first := pool(w, msgs, call, want)
	elapsed, cpu1, trips1 := time.Since(start), driver.CPUSeconds(), trips.n.Load()

	out := driver.Result{
		System: "pkg-idem-redis", Scenario: scenario, Workers: w, Messages: n, Validation: map[bool]string{true: "on", false: "off"}[validation],
		Seconds: elapsed.Seconds(), CPUSeconds: cpu1 - cpu0, Errors: errs,
		Requests:      map[string]int{"roundtrip": int(trips1 - trips0)},
		RequestsTotal: map[string]int{"roundtrip": int(trips1)},
		RSSKB:         driver.ProcStatusKB("VmRSS"), RSSPeakKB: driver.ProcStatusKB("VmHWM"),
	}
	out.MsgsPerSecond = float64(n) / out.Seconds
	out.CPUSecondsPerMessage = out.CPUSeconds / float64(n)
	out.RequestsPerMessage = float64(trips1-trips0) / float64(n)
	switch {
	case errs > 0:
		out.Failure = fmt.Sprintf("%d calls failed, first: %v", errs, first)
	case want == idem.Executed && len(calls) != n:
		out.Failure = fmt.Sprintf("%d of %d keys ran their effect", len(calls), n)
	case want == idem.Duplicate && len(calls) != 0:
		out.Failure = fmt.Sprintf("%d effects on duplicates", len(calls))
	}
	out.OK = out.Failure == ""
	goVersion, server := runtime.Version(), ""
	if info, err := client.InfoMap(ctx, "server").Result(); err == nil {
		server = info["Server"]["redis_version"]
	}
	out.Versions = map[string]*string{"go": &goVersion, "redis-server": &server}
	return out, nil
}

// pool calls call on every body from w goroutines.
func pool(w int, msgs []string, call func(string, idem.Outcome) error, want idem.Outcome) (int, error) {
	var (
		next  atomic.Int64
		mu    sync.Mutex
		errs  int
		first error
		wg    sync.WaitGroup
	)
	for range w {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < len(msgs); i = int(next.Add(1)) - 1 {
				if err := call(msgs[i], want); err != nil {
					mu.Lock()
					errs++
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return errs, first
}
