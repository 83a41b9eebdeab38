// Command chaos is `make chaos`: every fault at once, at volume, through
// the real binaries, and every key accounted for at the end.
//
// It starts DynamoDB Local and ElasticMQ (or uses AWS_ENDPOINT_URL, e.g.
// LocalStack), provisions the stack from the test profile's template for
// each mode the effect implements (consumer.Modes), and for each publishes N
// keys through the producer Lambda while it throws duplicates, 8-instance
// deliveries, SIGKILLs, SIGSTOP zombies, DynamoDB throttling, 5xx and lost
// acknowledgements, poison and malformed messages at the consumers (see
// package chaos). It prints progress, then writes report.md and chart.svg
// to .cache/chaos/<time>/ and exits 1 when a key was lost, a
// transactional run doubled an effect, or a lease-mode double effect has no
// kill, freeze or missing receipt to explain it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/exactlyonce/sqsidem/integration/internal/chaos"
	"github.com/exactlyonce/sqsidem/integration/internal/emu"
	"github.com/exactlyonce/sqsidem/integration/internal/system"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

type options struct {
	keys      int
	modes     []string
	parallel  bool
	consumers int
	pollers   int
	producers int
	consumer  string
	producer  string
	chunk     int
	backlog   int
	rates     chaos.Rates
	seed      uint64
	timeout   time.Duration
	drain     time.Duration
	every     time.Duration
	warm      time.Duration
	out       string
	profile   string
	backoff   bool
	outage    chaos.Outage
}

func main() {
	// The harness allocates a lot of short-lived garbage (HTTP, JSON) and
	// has memory to spare: collect less often.
	debug.SetGCPercent(400)
	o := options{rates: chaos.DefaultRates}
	var modes string
	flag.IntVar(&o.keys, "keys", 100_000, "keys per mode")
	flag.StringVar(&modes, "modes", strings.Join(consumer.Modes(), ","), "modes to run (IDEM_MODE), comma-separated; those the effect does not implement are skipped")
	flag.BoolVar(&o.parallel, "parallel", false, "run the modes at the same time on the same emulators")
	flag.IntVar(&o.consumers, "consumers", 16, "consumer instances behind the event source mapping")
	flag.IntVar(&o.pollers, "pollers", 16, "concurrent batches of the event source mapping (the deployed stack allows 5: see the package doc)")
	flag.IntVar(&o.producers, "producers", 12, "producer instances, one run each at a time")
	flag.IntVar(&o.chunk, "chunk", 20, "messages per producer run")
	flag.IntVar(&o.backlog, "backlog", 300, "messages waiting in the queue before publishing pauses (0: no limit)")
	flag.Float64Var(&o.rates.Duplicates, "duplicates", o.rates.Duplicates, "share of keys sent again (half re-triggered producer runs, half raw copies)")
	flag.Float64Var(&o.rates.FanOut, "fanout", o.rates.FanOut, "share of keys also delivered to 8 instances at the same moment")
	flag.Float64Var(&o.rates.Kill, "kill", o.rates.Kill, "share of consumer invocations SIGKILLed (before the effect, after it, mid-batch)")
	flag.Float64Var(&o.rates.Zombie, "zombie", o.rates.Zombie, "share of consumer invocations frozen past their lease (zombies)")
	flag.Float64Var(&o.rates.Throttle, "throttle", o.rates.Throttle, "share of the Lambdas' DynamoDB requests throttled")
	flag.Float64Var(&o.rates.Fail, "5xx", o.rates.Fail, "share of the Lambdas' DynamoDB requests answered 500")
	flag.Float64Var(&o.rates.LoseAck, "lost-ack", o.rates.LoseAck, "share of the Lambdas' DynamoDB requests applied, then answered 500")
	flag.Float64Var(&o.rates.Poison, "poison", o.rates.Poison, "poison keys, as a share of the keys")
	flag.Float64Var(&o.rates.Malformed, "malformed", o.rates.Malformed, "malformed messages, as a share of the keys")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of every random choice")
	flag.DurationVar(&o.timeout, "timeout", 40*time.Minute, "limit for the whole run; it stops and cleans up when reached")
	flag.DurationVar(&o.drain, "drain", 5*time.Minute, "limit for the queue to drain once everything is sent, per mode")
	flag.DurationVar(&o.every, "progress", 5*time.Second, "progress line period")
	flag.DurationVar(&o.warm, "warmup", 10*time.Second, "drive the emulators this long before the first run, so that their JIT is warm (0: none)")
	flag.StringVar(&o.out, "out", "", "directory for the report, chart and logs (default .cache/chaos/<time>)")
	flag.StringVar(&o.consumer, "consumer-binary", "", "consumer host build (default build/host/consumer)")
	flag.StringVar(&o.producer, "producer-binary", "", "producer host build (default build/host/producer)")
	flag.StringVar(&o.profile, "cpuprofile", "", "write a CPU profile of this process (the harness) to this file")
	flag.DurationVar(&o.outage.For, "outage", 0, "throttle every DynamoDB request of the consumers this long, a store slow for a while (0: never)")
	flag.DurationVar(&o.outage.After, "outage-at", 20*time.Second, "when the -outage starts, after the first send")
	flag.BoolVar(&o.backoff, "store-backoff", true, "give the consumers the queue's visibility timeout (IDEM_VISIBILITY_TIMEOUT), so that a record that failed on the store comes back later with each receive; false: the queue's fixed timeout, to compare")
	flag.Parse()
	o.modes = strings.Split(modes, ",")
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	// Ctrl-C stops the run and cleans up; a second one kills at once (the
	// Lambdas and emulators die with this process: Pdeathsig).
	sig, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() { <-sig.Done(); stop() }()
	ctx, cancel := context.WithTimeout(sig, o.timeout)
	err := run(ctx, o)
	cancel()
	switch {
	case err == nil:
		return
	case sig.Err() != nil:
		fmt.Fprintln(os.Stderr, "chaos: interrupted; everything it started was stopped")
		os.Exit(130)
	case errors.Is(err, context.DeadlineExceeded):
		err = fmt.Errorf("%w (the -timeout of %s was reached; everything was stopped)", err, o.timeout)
	}
	if !strings.HasPrefix(err.Error(), "chaos: ") {
		err = fmt.Errorf("chaos: %w", err)
	}
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

func (o options) validate() error {
	for _, m := range o.modes {
		if !slices.Contains(consumer.Modes(), m) {
			return fmt.Errorf("-modes: %q is not one of %v", m, consumer.Modes())
		}
	}
	switch {
	case o.keys < 1:
		return errors.New("-keys must be at least 1")
	case o.consumers < 1 || o.pollers < 1 || o.producers < 1 || o.chunk < 1 || o.backlog < 0:
		return errors.New("-consumers, -pollers, -producers and -chunk must be at least 1, -backlog at least 0")
	case o.timeout <= 0 || o.drain <= 0:
		return errors.New("-timeout and -drain must be positive")
	case o.outage.For < 0 || o.outage.After < 0:
		return errors.New("-outage and -outage-at must not be negative")
	}
	return o.rates.Validate()
}

func run(ctx context.Context, o options) error {
	began := time.Now()
	root, err := emu.RepoRoot()
	if err != nil {
		return err
	}
	template, err := system.FindTemplate(root)
	if err != nil {
		return err
	}
	consumerBin, producerBin := o.consumer, o.producer
	if consumerBin == "" {
		consumerBin = filepath.Join(root, "build/host/consumer")
	}
	if producerBin == "" {
		producerBin = filepath.Join(root, "build/host/producer")
	}
	for _, b := range []string{consumerBin, producerBin} {
		if _, err := os.Stat(b); err != nil {
			return fmt.Errorf("no host build %s (run `make build`)", b)
		}
	}
	if o.out == "" {
		o.out = filepath.Join(root, ".cache", "chaos", began.Format("20060102-150405"))
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	if o.profile != "" {
		f, err := os.Create(o.profile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	emus, err := emu.StartPair(ctx, root)
	if err != nil {
		return err
	}
	defer emus.Stop()
	dynamoURL, sqsURL, pids := emus.DynamoURL, emus.SQSURL, emus.Pids
	endpoint := fmt.Sprintf("DynamoDB Local %s, ElasticMQ %s (started in %.1fs)", dynamoURL, sqsURL, time.Since(began).Seconds())
	if len(pids) == 0 {
		endpoint = "AWS_ENDPOINT_URL=" + dynamoURL
	}
	if o.warm > 0 {
		ddb, mq, err := emu.Clients(ctx, dynamoURL, sqsURL)
		if err != nil {
			return err
		}
		w := time.Now()
		if err := chaos.Warm(ctx, ddb, mq, o.warm); err != nil {
			return err
		}
		endpoint += fmt.Sprintf("; JIT warm-up %.0fs", time.Since(w).Seconds())
	}
	loadStart := loadavg()
	fmt.Printf("chaos: %s keys per mode, modes %s; %s; output in %s\n", fmt.Sprint(o.keys), strings.Join(o.modes, ", "), endpoint, rel(root, o.out))

	cfg := func(mode string) chaos.Config {
		return chaos.Config{
			System: system.Config{
				Template: template, DynamoURL: dynamoURL, SQSURL: sqsURL,
				ConsumerBinary: consumerBin, ProducerBinary: producerBin, Consumers: o.consumers,
			},
			Mode: mode, Keys: o.keys, Rates: o.rates, Seed: o.seed,
			Pollers: o.pollers, Producers: o.producers, Chunk: o.chunk, Backlog: o.backlog, Drain: o.drain,
			LogPath: filepath.Join(o.out, mode+"-lambdas.log"), Progress: os.Stdout, Every: o.every,
			Emulators: pids, StoreBackoff: o.backoff, Outage: o.outage,
		}
	}
	results := make([]*chaos.Result, len(o.modes))
	errs := make([]error, len(o.modes))
	if o.parallel {
		var wg sync.WaitGroup
		for i, mode := range o.modes {
			wg.Go(func() { results[i], errs[i] = chaos.Run(ctx, cfg(mode)) })
		}
		wg.Wait()
	} else {
		for i, mode := range o.modes {
			if ctx.Err() != nil {
				errs[i] = fmt.Errorf("%s mode not run: %w", mode, ctx.Err())
				continue
			}
			results[i], errs[i] = chaos.Run(ctx, cfg(mode))
		}
	}
	var done []*chaos.Result
	for i, r := range results {
		if errors.Is(errs[i], system.ErrMode) {
			fmt.Printf("chaos: %s mode skipped: %v\n", o.modes[i], errs[i])
			errs[i] = nil
		}
		if r != nil {
			done = append(done, r)
		}
	}
	if len(done) > 0 && !errors.Is(ctx.Err(), context.Canceled) {
		if err := write(o, root, began, endpoint, loadStart, done); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// write puts report.md and chart.svg in the output directory and prints
// the summary; it returns ErrInvariant when a run broke it.
func write(o options, root string, began time.Time, endpoint, loadStart string, results []*chaos.Result) error {
	var panels []chaos.Panel
	for _, r := range results {
		panels = append(panels, chaos.Panel{
			Title: fmt.Sprintf("%s mode — %s deliveries, %.0f msgs/s, %d kills, %d freezes", r.Mode, fmt.Sprint(r.Deliveries), r.Throughput(), count(r, chaos.EventKill), count(r, chaos.EventFreeze)),
			Start: r.Start, Samples: r.Samples, Events: r.Events,
		})
	}
	title := fmt.Sprintf("Chaos run: %d keys per mode", o.keys)
	chart, err := os.Create(filepath.Join(o.out, "chart.svg"))
	if err != nil {
		return err
	}
	if err := chaos.WriteChart(chart, title, panels); err != nil {
		chart.Close()
		return err
	}
	if err := chart.Close(); err != nil {
		return err
	}
	// Everything measured, for whoever wants to look further than the report.
	raw, err := json.MarshalIndent(results, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.out, "results.json"), raw, 0o644); err != nil {
		return err
	}
	report, err := os.Create(filepath.Join(o.out, "report.md"))
	if err != nil {
		return err
	}
	chaos.WriteReport(report, chaos.Header{
		Title: title, Started: began, Took: time.Since(began), Machine: machine(),
		Load: loadStart + " at the start, " + loadavg() + " at the end", Settings: strings.Join(os.Args[1:], " "),
		Endpoint: endpoint, Chart: "chart.svg",
	}, results)
	if err := report.Close(); err != nil {
		return err
	}
	fmt.Println()
	chaos.Summary(os.Stdout, results)
	fmt.Printf("\nreport %s\nchart  %s\n(took %s)\n", rel(root, filepath.Join(o.out, "report.md")), rel(root, filepath.Join(o.out, "chart.svg")), time.Since(began).Round(time.Second))
	for _, r := range results {
		if len(r.Problems) > 0 {
			return fmt.Errorf("%w in %s mode: %s", chaos.ErrInvariant, r.Mode, strings.Join(r.Problems, "; "))
		}
	}
	return nil
}
