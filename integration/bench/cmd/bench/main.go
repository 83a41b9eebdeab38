// Command bench is `make bench`: pkg/idem against Powertools for AWS Lambda
// (Python and TypeScript) on the same DynamoDB Local, side by side.
//
// It starts one DynamoDB Local and a counting proxy in front of it
// (integration/internal/faultproxy), installs the Powertools side, and runs
// every scenario of every system as a separate child process: a driver
// (integration/bench/godriver, integration/bench/powertools/{py,ts}) that
// prints one JSON object. So CPU per message is each child's own CPU time
// over its measured loop, requests per message are counted on the wire for
// everyone alike, and cold starts and memory are measured the same way.
// The systems take turns within every repeat (each repeat starting with the
// next one: rotate), and the report gives medians over the repeats and the
// ratio pkg/idem ÷ Powertools, and pkg/idem ÷ the bare SDK loop (--floor),
// per metric. The cases with a modelled latency run on an in-memory
// DynamoDB (internal/modelddb) instead of DynamoDB Local, which answers one
// request at a time.
//
// It writes .cache/bench/<timestamp>/report.md and results.json (every run's
// JSON, the medians, the targets, the CPU profile split), copies the report
// to .cache/bench/latest.md and prints it.
//
//	go run ./integration/bench/cmd/bench [-repeats 3] [-n 2000] [-quick] [-systems py,ts,go]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/exactlyonce/sqsidem/integration/bench/internal/modelddb"
	"github.com/exactlyonce/sqsidem/integration/bench/internal/report"
	"github.com/exactlyonce/sqsidem/integration/internal/emu"
	"github.com/exactlyonce/sqsidem/integration/internal/faultproxy"
)

type config struct {
	root                       string
	repeats, messages, events  int
	delay                      time.Duration
	delayMessages, delayEvents int
	coldRuns                   int
	profileMessages            int
	profileWorkers             int
	systems                    map[string]bool
	redis                      bool
	out                        string // .cache/bench
	godriver, consumer         string
	redisDriver                string
	command                    string
}

func main() {
	cfg, err := parseFlags()
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := bench(ctx, cfg); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		stop()
		os.Exit(1)
	}
}

func parseFlags() (config, error) {
	cfg := config{systems: map[string]bool{}}
	quick := flag.Bool("quick", false, "a short run to check the wiring: 1 repeat, fewer messages")
	systems := flag.String("systems", "py,ts,go", "systems to run: py, ts, go (go: pkg/idem and the bare SDK loop)")
	flag.IntVar(&cfg.repeats, "repeats", 3, "repeats of every case (medians over them)")
	flag.IntVar(&cfg.messages, "n", 2000, "keys of the lease cases")
	flag.IntVar(&cfg.events, "events", 50, "SQS events of 10 records of the batch cases")
	flag.DurationVar(&cfg.delay, "delay", 5*time.Millisecond, "modelled DynamoDB latency per request of the latency cases")
	flag.IntVar(&cfg.delayMessages, "delay-n", 200, "messages of the one-record latency cases")
	flag.IntVar(&cfg.delayEvents, "delay-events", 40, "events of the batch latency cases")
	flag.IntVar(&cfg.coldRuns, "cold-runs", 5, "cold starts per system and repeat")
	flag.IntVar(&cfg.profileMessages, "profile-n", 8000, "messages of the CPU profile run")
	flag.IntVar(&cfg.profileWorkers, "profile-w", 16, "workers of the CPU profile run")
	flag.BoolVar(&cfg.redis, "redis", true, "also run pkg/idem on Redis (redisstore) when redis-server is on PATH")
	flag.Parse()
	if *quick {
		cfg.repeats, cfg.messages, cfg.events = 1, 300, 10
		cfg.delayMessages, cfg.delayEvents, cfg.coldRuns, cfg.profileMessages = 30, 5, 2, 1000
	}
	for s := range strings.SplitSeq(*systems, ",") {
		switch strings.TrimSpace(s) {
		case "py":
			cfg.systems[report.Py] = true
		case "ts":
			cfg.systems[report.TS] = true
		case "go":
			cfg.systems[report.Go] = true
			cfg.systems[report.Floor] = true // the Go driver's bare SDK loop
		default:
			return cfg, fmt.Errorf("-systems: unknown system %q (py, ts, go)", s)
		}
	}
	if cfg.repeats < 1 || cfg.messages < 1 || cfg.events < 1 || cfg.delayMessages < 1 || cfg.delayEvents < 1 || cfg.coldRuns < 1 {
		return cfg, fmt.Errorf("counts must be positive")
	}
	root, err := emu.RepoRoot()
	if err != nil {
		return cfg, err
	}
	cfg.root = root
	cfg.out = filepath.Join(root, ".cache", "bench")
	cfg.godriver = filepath.Join(cfg.out, "bin", "godriver")
	cfg.redisDriver = filepath.Join(cfg.out, "bin", "redisdriver")
	cfg.consumer = filepath.Join(root, "build", "host", "consumer")
	cfg.command = "go run ./integration/bench/cmd/bench " + strings.Join(os.Args[1:], " ")
	if len(os.Args) == 1 {
		cfg.command = "make bench"
	}
	return cfg, nil
}

func bench(ctx context.Context, cfg config) error {
	// This process hosts the counting proxy and the modelled-latency store,
	// which stand for DynamoDB's side: the less CPU they take from the cores
	// the drivers share, the closer to a store on other machines. A live heap
	// of a few MB would otherwise collect every few hundred requests.
	debug.SetGCPercent(400)
	started := time.Now()
	mach := machine()
	dir := filepath.Join(cfg.out, started.UTC().Format("20060102-150405"))
	logDir := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}
	progress("setting up: Powertools (install.sh), the Go driver, DynamoDB Local; logs in %s", logDir)
	if err := install(ctx, cfg.root, cfg.systems); err != nil {
		return err
	}
	if err := build(ctx, cfg); err != nil {
		return err
	}
	var notes []string
	redisJobs, redisURL, stopRedis, note := startRedis(ctx, cfg)
	defer stopRedis()
	if note != "" {
		notes = append(notes, note)
	}

	ddb, err := emu.StartDynamoDB(ctx, cfg.root)
	if err != nil {
		return err
	}
	defer ddb.Stop()
	proxy, err := faultproxy.Start(ddb.URL())
	if err != nil {
		return err
	}
	defer proxy.Close()
	store, err := modelddb.Start(cfg.delay)
	if err != nil {
		return err
	}
	defer store.Close()
	admin, _, err := emu.Clients(ctx, ddb.URL(), ddb.URL())
	if err != nil {
		return err
	}
	r := &runner{cfg: cfg, proxy: proxy, model: store, admin: admin, drivers: drivers(cfg), logDir: logDir, redisURL: redisURL}

	jobs := only(plan(cfg), cfg.systems)
	warmUp(ctx, r, jobs)
	var samples []report.Sample
	for rep := 1; rep <= cfg.repeats && ctx.Err() == nil; rep++ {
		mach.Load1 = append(mach.Load1, load1())
		for _, j := range append(jobs, redisJobs...) {
			for _, system := range rotate(j.systems, rep) {
				s := r.runJob(ctx, j, system, rep)
				samples = append(samples, s)
				progress("[%d/%d] %-27s %-18s %s", rep, cfg.repeats, j.c, system, line(s))
			}
		}
		for range cfg.coldRuns {
			for _, system := range allSystems {
				if cfg.systems[system] {
					samples = append(samples, r.cold(ctx, system, rep))
				}
			}
		}
		progress("[%d/%d] cold starts done", rep, cfg.repeats)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var prof *report.Profile
	if cfg.systems[report.Go] {
		progress("CPU profile of the Go driver (lease-new, %d messages, %d workers)", cfg.profileMessages, cfg.profileWorkers)
		if prof, err = r.profile(ctx, dir); err != nil {
			notes = append(notes, "CPU profile failed: "+err.Error())
		}
	}
	mach.LoadEnd = loadAvg()
	meta := report.Meta{
		Command: cfg.command, Started: started, Took: time.Since(started), Repeats: cfg.repeats,
		Messages: cfg.messages, Events: cfg.events, Delay: cfg.delay, DelayMessages: cfg.delayMessages,
		DelayEvents: cfg.delayEvents, ColdRuns: cfg.coldRuns, Machine: mach, Versions: versions(cfg, r.results),
		Notes: append(notes, settingsNotes(cfg)...),
	}
	return write(cfg, dir, meta, samples, prof, r.results)
}

// rotate is the systems of a case in the order of repeat rep: each repeat
// starts one further along, so that no system always runs first (on a
// colder emulator) or right after the same neighbour.
func rotate(systems []string, rep int) []string {
	if len(systems) == 0 {
		return nil
	}
	k := rep % len(systems)
	return append(slices.Clone(systems[k:]), systems[:k]...)
}

// warmUp runs every system once, unmeasured: DynamoDB Local's JIT, the
// page cache and Python's bytecode cache are warm before the first repeat.
func warmUp(ctx context.Context, r *runner, jobs []job) {
	progress("warming up (not measured)")
	w := job{c: "warm-up", scenario: "lease-new", args: []string{"-n", "200", "-w", "16"}}
	for _, system := range allSystems {
		if r.cfg.systems[system] {
			r.runJob(ctx, w, system, 0)
			r.cold(ctx, system, 0)
		}
	}
	r.results = nil
}

func line(s report.Sample) string {
	if s.Failure != "" {
		return "FAILED: " + s.Failure
	}
	m := s.Metrics
	out := fmt.Sprintf("%6.0f msg/s %6.0f µs CPU/msg %5.2f req/msg", m[report.MsgsPerS], m[report.CPUus], m[report.WireRPM])
	if v, ok := m[report.MsPerEvt]; ok {
		out += fmt.Sprintf(" %6.1f ms/event", v)
	}
	return out
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
