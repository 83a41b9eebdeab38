// Command godriver is the pkg/idem side of `make bench`: one scenario per
// run, the same scenarios, flags, JSON and exit statuses as the Powertools
// drivers (integration/bench/powertools/README.md), so that the orchestrator
// runs and measures every system the same way.
//
//	godriver SCENARIO --endpoint URL --table NAME [--create-table] [-n N] [-w W] [-r R]
//	         [--processor concurrent|sequential] [--validation on|off] [--key-prefix P] [--floor]
//	         [--cpuprofile FILE] [--trace FILE] [--blockprofile FILE] [--mutexprofile FILE]
//
// Scenarios: lease-new, lease-dup, batch-new, batch-dup, cold (as the
// Powertools drivers), and cache-dup, tx-new, tx-dup, batch-tx-new (pkg/idem
// only). --floor (lease-new, tx-new, batch-new, batch-tx-new) runs the
// scenario as the bare SDK: the requests pkg/idem sent for one new message,
// sent again for every message with only the key changed (floor.go).
// The settings match the Powertools side: the key is the body's orderId,
// the payload is fingerprinted (--validation on), no cache outside
// cache-dup, receipts kept 7 days, a lease of the 30 s an invocation has
// left, an HTTP pool of W connections, dummy credentials.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"time"

	"github.com/exactlyonce/sqsidem/integration/bench/internal/driver"
)

// profileHz is the CPU profile's sampling rate.
const profileHz = 1000

// t0 is taken as early as a Go program can: cold reports from here.
var t0 = time.Now()

type args struct {
	scenario, endpoint, table string
	createTable               bool
	messages, workers, events int
	processor, validation     string
	keyPrefix, cpuProfile     string
	floor                     bool
	// traceFile, blockProfile and mutexProfile: what the loop waited on
	// (runtime/trace; blocking and lock contention, every event sampled).
	traceFile, blockProfile, mutexProfile string
}

// usageError is bad usage or setup: exit 2, no JSON.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func parse(argv []string) (args, error) {
	var a args
	if len(argv) == 0 || strings.HasPrefix(argv[0], "-") {
		return a, usageError{"the scenario comes first"}
	}
	a.scenario = argv[0]
	fs := flag.NewFlagSet("godriver", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&a.endpoint, "endpoint", "", "DynamoDB endpoint URL")
	fs.StringVar(&a.table, "table", "", "table name (partition key id, S)")
	fs.BoolVar(&a.createTable, "create-table", false, "create the table first")
	for _, n := range []string{"n", "messages"} {
		fs.IntVar(&a.messages, n, 1000, "lease-*, tx-*, cache-dup: number of keys")
	}
	for _, n := range []string{"w", "workers"} {
		fs.IntVar(&a.workers, n, 0, "workers (default 1; batch: 10 concurrent, 1 sequential)")
	}
	for _, n := range []string{"r", "events"} {
		fs.IntVar(&a.events, n, 50, "batch-*: SQS events of 10 records")
	}
	fs.StringVar(&a.processor, "processor", "concurrent", "batch-*: concurrent (sqsbatch's default) or sequential")
	fs.StringVar(&a.validation, "validation", "on", "payload fingerprint: on or off")
	fs.StringVar(&a.keyPrefix, "key-prefix", "", "prefix of the orderIds (default unique per run)")
	fs.StringVar(&a.cpuProfile, "cpuprofile", "", "write a CPU profile of the measured loop")
	fs.BoolVar(&a.floor, "floor", false, "the bare SDK replaying pkg/idem's requests (lease-new, tx-new, batch-new, batch-tx-new)")
	fs.StringVar(&a.traceFile, "trace", "", "write an execution trace of the measured loop (go tool trace)")
	fs.StringVar(&a.blockProfile, "blockprofile", "", "write a profile of the loop's blocking events")
	fs.StringVar(&a.mutexProfile, "mutexprofile", "", "write a profile of the loop's contended locks")
	if err := fs.Parse(argv[1:]); err != nil {
		return a, usageError{err.Error()}
	}
	switch a.scenario {
	case driver.LeaseNew, driver.LeaseDup, driver.BatchNew, driver.BatchDup, driver.Cold,
		driver.CacheDup, driver.TxNew, driver.TxDup, driver.BatchTxNew:
	default:
		return a, usageError{fmt.Sprintf("unknown scenario %q", a.scenario)}
	}
	batch := strings.HasPrefix(a.scenario, "batch")
	switch {
	case fs.NArg() > 0:
		return a, usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	case a.endpoint == "" || a.table == "":
		return a, usageError{"--endpoint and --table are required"}
	case a.processor != "concurrent" && a.processor != "sequential":
		return a, usageError{"--processor: concurrent or sequential"}
	case a.validation != "on" && a.validation != "off":
		return a, usageError{"--validation: on or off"}
	case a.floor && a.scenario != driver.LeaseNew && a.scenario != driver.TxNew && a.scenario != driver.BatchNew && a.scenario != driver.BatchTxNew:
		return a, usageError{"--floor: lease-new, tx-new, batch-new or batch-tx-new"}
	}
	if a.workers == 0 {
		a.workers = 1
		if batch && a.processor == "concurrent" {
			a.workers = driver.BatchSize
		}
	}
	if batch && a.processor == "sequential" && a.workers != 1 {
		return a, usageError{"--processor sequential runs one record at a time: --workers must be 1"}
	}
	if a.messages < 1 || a.workers < 1 || a.events < 1 {
		return a, usageError{"--messages, --workers and --events must be positive"}
	}
	if a.keyPrefix == "" {
		a.keyPrefix = fmt.Sprintf("go-%d-%d", os.Getpid(), time.Now().UnixNano()%1e9)
	}
	return a, nil
}

func main() {
	a, err := parse(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "godriver: %v\nusage: godriver SCENARIO --endpoint URL --table NAME [--create-table] [-n N] [-w W] [-r R] "+
			"[--processor concurrent|sequential] [--validation on|off] [--key-prefix P] [--floor] [--cpuprofile FILE] [--trace FILE] "+
			"[--blockprofile FILE] [--mutexprofile FILE]\n", err)
		os.Exit(driver.ExitBadRun)
	}
	os.Exit(run(a))
}

func run(a args) int {
	ctx := context.Background()
	env, err := newEnv(ctx, a)
	if err != nil {
		fmt.Fprintf(os.Stderr, "godriver: %v\n", err)
		return driver.ExitBadRun
	}
	if a.scenario == driver.Cold {
		return emit(coldResult(a))
	}
	out := driver.Result{System: driver.SystemGo, Scenario: a.scenario, Workers: a.workers, Messages: a.messages, Validation: a.validation}
	if a.floor {
		out.System = driver.SystemFloor
	}
	scenario := runLease
	if strings.HasPrefix(a.scenario, "batch") {
		scenario = runBatch
		out.Messages = a.events * driver.BatchSize
		out.Processor = a.processor
		out.ProcessorImpl = fmt.Sprintf("sqsbatch.Handler(WithConcurrency(%d))", a.workers)
		if a.floor {
			out.ProcessorImpl = fmt.Sprintf("%d goroutines, each a record's requests", a.workers)
		}
	}
	failure, err := scenario(ctx, env, a, &out)
	if err != nil {
		fmt.Fprintf(os.Stderr, "godriver: %v\n", err)
		return driver.ExitBadRun
	}
	out.RSSKB, out.RSSPeakKB = driver.ProcStatusKB("VmRSS"), driver.ProcStatusKB("VmHWM")
	if out.Seconds > 0 {
		out.MsgsPerSecond = float64(out.Messages) / out.Seconds
	}
	out.CPUSecondsPerMessage = out.CPUSeconds / float64(out.Messages)
	total := 0
	for _, n := range out.Requests {
		total += n
	}
	out.RequestsPerMessage = float64(total) / float64(out.Messages)
	out.OK = failure == ""
	out.Failure = failure
	if failure != "" {
		fmt.Fprintf(os.Stderr, "godriver: FAILED: %s\n", failure)
	}
	out.Versions = versions()
	return emit(out)
}

func emit(out driver.Result) int {
	b, err := json.Marshal(out)
	if err != nil {
		fmt.Fprintf(os.Stderr, "godriver: %v\n", err)
		return driver.ExitBadRun
	}
	os.Stdout.Write(append(b, '\n'))
	if !out.OK {
		return driver.ExitFailed
	}
	return driver.ExitOK
}

// measure runs loop between two readings of the clock, the CPU time of the
// process and the request counter, with a CPU profile when asked.
func measure(env *env, a args, out *driver.Result, loop func() error) error {
	if a.cpuProfile != "" {
		f, err := os.Create(a.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		// 1 kHz instead of pprof's 100 Hz: a few seconds of loop give
		// thousands of samples. StartCPUProfile then complains that the rate
		// is already set (on stderr) and keeps it; the profile's sample values
		// are scaled for 100 Hz, which leaves the shares right.
		runtime.SetCPUProfileRate(profileHz)
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	stopWaits, err := profileWaits(a)
	if err != nil {
		return err
	}
	req0, cpu0, start := env.counter.snapshot(), driver.CPUSeconds(), time.Now()
	err = loop()
	elapsed, cpu1, req1 := time.Since(start), driver.CPUSeconds(), env.counter.snapshot()
	if a.cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if werr := stopWaits(); werr != nil && err == nil {
		err = werr
	}
	out.Seconds, out.CPUSeconds = elapsed.Seconds(), cpu1-cpu0
	out.Requests = delta(req1, req0)
	out.RequestsTotal = env.counter.snapshot()
	return err
}

// profileWaits starts what --trace, --blockprofile and --mutexprofile ask
// for; stop writes them. They show where a loop waits rather than what it
// computes: a batch whose records wait on a lock, a pool or each other.
func profileWaits(a args) (stop func() error, err error) {
	var stops []func() error
	stop = func() error {
		var first error
		for _, s := range stops {
			if err := s(); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	if a.traceFile != "" {
		f, err := os.Create(a.traceFile)
		if err != nil {
			return stop, err
		}
		if err := trace.Start(f); err != nil {
			f.Close()
			return stop, err
		}
		stops = append(stops, func() error { trace.Stop(); return f.Close() })
	}
	for _, p := range []struct {
		path, name string
		on, off    func()
	}{
		{a.blockProfile, "block", func() { runtime.SetBlockProfileRate(1) }, func() { runtime.SetBlockProfileRate(0) }},
		{a.mutexProfile, "mutex", func() { runtime.SetMutexProfileFraction(1) }, func() { runtime.SetMutexProfileFraction(0) }},
	} {
		if p.path == "" {
			continue
		}
		p.on()
		stops = append(stops, func() error {
			p.off()
			f, err := os.Create(p.path)
			if err != nil {
				return err
			}
			if err := pprof.Lookup(p.name).WriteTo(f, 0); err != nil {
				f.Close()
				return err
			}
			return f.Close()
		})
	}
	return stop, nil
}

// checkEffects is nil when every key ran its effect exactly once (new) or
// none did (duplicates); otherwise it says what went wrong.
func checkEffects(isNew bool, keys []string, calls map[string]int, errs int, first error) string {
	if errs > 0 {
		return fmt.Sprintf("%d calls failed, first: %v", errs, first)
	}
	if !isNew {
		if len(calls) > 0 {
			n := 0
			for _, c := range calls {
				n += c
			}
			return fmt.Sprintf("%d effect calls on duplicates", n)
		}
		return ""
	}
	var bad []string
	for _, k := range keys {
		if calls[k] != 1 {
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 || len(calls) != len(keys) {
		return fmt.Sprintf("%d of %d keys did not run their effect exactly once (e.g. %v), %d keys ran", len(bad), len(keys), bad[:min(3, len(bad))], len(calls))
	}
	return ""
}

var errWrongResult = errors.New("wrong result")
