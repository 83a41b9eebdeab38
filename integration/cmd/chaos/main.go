// Command chaos is `make chaos`: every fault at once, at volume, through
// the real binaries, and every key accounted for at the end.
//
// It starts DynamoDB Local and ElasticMQ (or uses AWS_ENDPOINT_URL, e.g.
// LocalStack), provisions the stack from the test profile's template for
// each mode the effect implements (consumer.Modes) — in lease mode once per
// unknown-outcome policy (-policies: reconcile, hold, retry) — and for each
// publishes N keys through the producer Lambda while it throws duplicates,
// 8-instance deliveries, SIGKILLs, SIGSTOP zombies, DynamoDB throttling,
// 5xx and lost acknowledgements, the partner's refusals, lost replies,
// late answers and an outage, poison and malformed messages at the
// consumers (see package chaos); with -per-process 8, at consumer
// processes that each run 8 invocations at once (AWS_LAMBDA_MAX_CONCURRENCY,
// as on Lambda Managed Instances), a kill taking all 8. The hold policy's
// held keys are then resolved with idemctl from the partner's answer, and the not-done ones
// sent once more. It prints progress and the runs side by side, writes
// report.md and chart.svg to .cache/chaos/<time>/, and exits 1 when a key
// was lost, transactional mode or the reconcile or hold policy doubled an
// effect, a held key was not accounted for or not applied exactly once
// after its resolution, or a retry-policy double effect has no
// unknown-outcome window (a kill, a freeze, a lost or late reply, a
// missing receipt) to explain it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
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
	policies  []string
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
	// The partner's outage and how late its slow answers come (0: the
	// consumer's function timeout and a second); idemctl resolves the
	// hold policy's held keys.
	partnerOutage chaos.Outage
	slowFor       time.Duration
	idemctl       string
	// Invocations per consumer process (AWS_LAMBDA_MAX_CONCURRENCY).
	perProcess perProcess
}

func main() {
	// The harness allocates a lot of short-lived garbage (HTTP, JSON) and
	// has memory to spare: collect less often.
	debug.SetGCPercent(400)
	o := options{rates: chaos.DefaultRates}
	var modes, policies, per string
	flag.IntVar(&o.keys, "keys", 100_000, "keys per run (per mode, and in lease mode per policy)")
	flag.StringVar(&modes, "modes", strings.Join(consumer.Modes(), ","), "modes to run (IDEM_MODE), comma-separated; those the effect does not implement are skipped")
	flag.StringVar(&policies, "policies", strings.Join(chaos.Policies(), ","), "lease mode's unknown-outcome policies, a run each, comma-separated: reconcile (the template: Reconcile asks the partner), hold (IDEM_UNKNOWN_OUTCOME=hold without Reconcile; held keys resolved with idemctl), retry (without Reconcile: the window open)")
	flag.BoolVar(&o.parallel, "parallel", false, "run the modes (and policies) at the same time on the same emulators")
	flag.IntVar(&o.consumers, "consumers", 16, "consumer invocations at once behind the event source mapping: that many processes, or with -per-process N that many / N")
	flag.StringVar(&per, "per-process", "1", "invocations one consumer process runs at once (AWS_LAMBDA_MAX_CONCURRENCY, as on Lambda Managed Instances; a kill or timeout takes them all): N for every run, or run=N,… for some (e.g. lease/reconcile=8; the others 1)")
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
	flag.Float64Var(&o.rates.PartnerRefuse, "partner-refuse", o.rates.PartnerRefuse, "share of the effect's calls the partner refuses with a 503 before applying them (lease mode)")
	flag.Float64Var(&o.rates.PartnerLoseReply, "partner-lost-reply", o.rates.PartnerLoseReply, "share of the effect's calls the partner applies and then cuts the reply of (lease mode)")
	flag.Float64Var(&o.rates.PartnerSlow, "partner-slow", o.rates.PartnerSlow, "share of the effect's calls the partner applies and answers after -partner-slow-for, past the caller's deadline (lease mode)")
	flag.DurationVar(&o.slowFor, "partner-slow-for", 0, "how late a slow partner answers (0: the consumer's function timeout and a second)")
	flag.DurationVar(&o.partnerOutage.For, "partner-outage", 3*time.Second, "take the partner down (every call and lookup refused) this long, longer than the lease (the test profile's: 2 s), once per lease-mode run (0: never)")
	flag.DurationVar(&o.partnerOutage.After, "partner-outage-at", 15*time.Second, "when the -partner-outage starts, after the first send")
	flag.StringVar(&o.idemctl, "idemctl", "", "the idemctl binary that resolves the hold policy's held keys (default: go build ./cmd/idemctl into the output directory)")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of every random choice")
	flag.DurationVar(&o.timeout, "timeout", 100*time.Minute, "limit for the whole run (every mode and policy); it stops and cleans up when reached")
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
	var perr error
	if o.policies, perr = chaos.ParsePolicies(policies); perr != nil {
		fmt.Fprintln(os.Stderr, "chaos: -policies:", perr)
		os.Exit(2)
	}
	if o.perProcess, perr = parsePerProcess(per); perr != nil {
		fmt.Fprintln(os.Stderr, "chaos: -per-process:", perr)
		os.Exit(2)
	}
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
	case o.partnerOutage.For < 0 || o.partnerOutage.After < 0 || o.slowFor < 0:
		return errors.New("-partner-outage, -partner-outage-at and -partner-slow-for must not be negative")
	}
	if err := o.perProcess.check(o.runs()); err != nil {
		return err
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
	runs := o.runs()
	if o.idemctl == "" && slices.ContainsFunc(runs, func(r runSpec) bool { return r.policy == chaos.PolicyHold }) {
		b := time.Now()
		if o.idemctl, err = buildIdemctl(ctx, root, o.out); err != nil {
			return err
		}
		endpoint += fmt.Sprintf("; idemctl built in %.0fs", time.Since(b).Seconds())
	}
	loadStart := loadavg()
	fmt.Printf("chaos: %s keys per run, runs %s; %s; output in %s\n", fmt.Sprint(o.keys), strings.Join(o.labels(runs), ", "), endpoint, rel(root, o.out))

	cfg := func(r runSpec) chaos.Config {
		return chaos.Config{
			System: system.Config{
				Template: template, DynamoURL: dynamoURL, SQSURL: sqsURL,
				ConsumerBinary: consumerBin, ProducerBinary: producerBin, Consumers: o.consumers,
			},
			Mode: r.mode, Policy: r.policy, Keys: o.keys, Rates: o.rates, Seed: o.seed,
			Pollers: o.pollers, PerProcess: o.perProcess.of(r.name()), Producers: o.producers, Chunk: o.chunk, Backlog: o.backlog, Drain: o.drain,
			LogPath: filepath.Join(o.out, strings.ReplaceAll(r.name(), "/", "-")+"-lambdas.log"), Progress: os.Stdout, Every: o.every,
			Emulators: pids, StoreBackoff: o.backoff, Outage: o.outage,
			PartnerOutage: o.partnerOutage, PartnerSlowFor: o.slowFor, Idemctl: o.idemctl,
		}
	}
	results := make([]*chaos.Result, len(runs))
	errs := make([]error, len(runs))
	if o.parallel {
		var wg sync.WaitGroup
		for i, r := range runs {
			wg.Go(func() { results[i], errs[i] = chaos.Run(ctx, cfg(r)) })
		}
		wg.Wait()
	} else {
		for i, r := range runs {
			if ctx.Err() != nil {
				errs[i] = fmt.Errorf("%s not run: %w", r.name(), ctx.Err())
				continue
			}
			results[i], errs[i] = chaos.Run(ctx, cfg(r))
		}
	}
	var done []*chaos.Result
	for i, r := range results {
		if errors.Is(errs[i], system.ErrMode) {
			fmt.Printf("chaos: %s skipped: %v\n", runs[i].name(), errs[i])
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
			Title: fmt.Sprintf("%s — %s deliveries, %.0f msgs/s, %d kills, %d freezes", r.Label(), fmt.Sprint(r.Deliveries), r.Throughput(), count(r, chaos.EventKill), count(r, chaos.EventFreeze)),
			Start: r.Start, Samples: r.Samples, Events: r.Events,
		})
	}
	title := fmt.Sprintf("Chaos run: %d keys per run", o.keys)
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
			return fmt.Errorf("%w in %s: %s", chaos.ErrInvariant, r.Label(), strings.Join(r.Problems, "; "))
		}
	}
	return nil
}

// runSpec is one run: a mode, and in lease mode a policy.
type runSpec struct{ mode, policy string }

func (r runSpec) name() string {
	if r.policy == "" {
		return r.mode
	}
	return r.mode + "/" + r.policy
}

// runs are the runs asked for: lease mode once per policy, any other mode
// once.
func (o options) runs() []runSpec {
	var out []runSpec
	for _, m := range o.modes {
		if m != consumer.ModeLease {
			out = append(out, runSpec{mode: m})
			continue
		}
		for _, p := range o.policies {
			out = append(out, runSpec{mode: m, policy: p})
		}
	}
	return out
}

// labels are the runs' names, each with its invocations per process when
// more than one.
func (o options) labels(runs []runSpec) []string {
	out := names(runs)
	for i, r := range runs {
		if n := o.perProcess.of(r.name()); n > 1 {
			out[i] += fmt.Sprintf(" ×%d", n)
		}
	}
	return out
}

func names(runs []runSpec) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.name()
	}
	return out
}

// buildIdemctl builds the operator's tool into dir.
func buildIdemctl(ctx context.Context, root, dir string) (string, error) {
	bin := filepath.Join(dir, "idemctl")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/idemctl")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/idemctl: %w\n%s", err, out)
	}
	return bin, nil
}
