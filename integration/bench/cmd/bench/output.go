package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/exactlyonce/sqsidem/integration/bench/internal/cost"
	"github.com/exactlyonce/sqsidem/integration/bench/internal/report"
)

// results is results.json: everything the report was made from.
type results struct {
	Meta    report.Meta     `json:"meta"`
	Targets []report.Target `json:"targets"`
	Figures []figure        `json:"figures"`
	Profile *report.Profile `json:"cpu_profile,omitempty"`
	Samples []report.Sample `json:"samples"`
	Runs    []rawResult     `json:"runs"`
}

// figure is the medians of one case and system.
type figure struct {
	Case    string                 `json:"case"`
	System  string                 `json:"system"`
	Metrics map[string]report.Stat `json:"metrics"`
}

// write puts report.md and results.json into dir, copies the report to
// .cache/bench/latest.md, and prints it.
func write(cfg config, dir string, meta report.Meta, samples []report.Sample, prof *report.Profile, runs []rawResult) error {
	f := report.Collect(samples)
	md := report.Render(meta, samples, prof) + "\n### The cost of a million messages\n\n" +
		cost.DefaultPrices.Render(cost.Systems(f, cost.DefaultMemoryMB))
	res := results{Meta: meta, Targets: report.Targets(f, prof), Profile: prof, Samples: samples, Runs: runs}
	for k, ms := range f {
		res.Figures = append(res.Figures, figure{Case: k.Case, System: k.System, Metrics: ms})
	}
	sort.Slice(res.Figures, func(i, j int) bool {
		a, b := res.Figures[i], res.Figures[j]
		if a.Case != b.Case {
			return a.Case < b.Case
		}
		return a.System < b.System
	})
	js, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	for path, data := range map[string][]byte{
		filepath.Join(dir, "report.md"):       []byte(md),
		filepath.Join(dir, "results.json"):    js,
		filepath.Join(cfg.out, "latest.md"):   []byte(md),
		filepath.Join(cfg.out, "latest.json"): js,
	} {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
	}
	fmt.Println(md)
	failed := 0
	for _, s := range samples {
		if s.Failure != "" {
			failed++
			progress("failed run: %s %s (repeat %d): %s", s.System, s.Case, s.Repeat, s.Failure)
		}
	}
	progress("targets:\n%s", report.Summary(f, prof))
	progress("report: %s, raw figures: %s (and %s)", filepath.Join(dir, "report.md"), filepath.Join(dir, "results.json"), filepath.Join(cfg.out, "latest.md"))
	if failed > 0 {
		return fmt.Errorf("%d runs failed (their figures are left out; logs in %s)", failed, filepath.Join(dir, "logs"))
	}
	return nil
}

// settingsNotes say how the figures were obtained, under the report.
func settingsNotes(cfg config) []string {
	return []string{
		"Same settings on every side: payload validation on (pkg/idem: SHA-256 fingerprint of the body; Powertools: " +
			"md5 of the payload), no local cache (except the cache row), the key is the body's `orderId`, receipts kept 7 days, " +
			"the lease is the 30 s an invocation has left, an HTTP pool of as many connections as workers, dummy credentials, " +
			"one DynamoDB Local behind the same proxy.",
		"Requests per message are counted on the wire by the proxy, for every request of a run; a run whose count differs " +
			"from the driver's own count fails. The measured loop's share is the wire count less the driver's warm-up and seeding requests.",
		"CPU per message is user+sys of the driver process over its measured loop (getrusage, process.cpuUsage), warm-up and " +
			"seeding excluded; DynamoDB Local and the proxy are other processes, so this is the library's and its SDK's own cost, " +
			"without the emulator's latency.",
		"Throughput and batch times on DynamoDB Local share the cores with the emulator, the proxy and the other engineers' " +
			"work on this machine: the emulator dominates them; the CPU figures and the ratios are the steadier numbers.",
		fmt.Sprintf("Modelled latency: every request waits %s (in-region DynamoDB's order of magnitude; a timer, no CPU) on an in-memory "+
			"DynamoDB in the orchestrator (integration/bench/internal/modelddb, the simulator's model behind DynamoDB's JSON protocol), "+
			"which answers concurrent requests concurrently as DynamoDB does. DynamoDB Local cannot: it runs every request on one SQLite "+
			"thread, about 1 ms of CPU each on these cores, so ten requests in flight leave one after the other (the rows \"on DynamoDB "+
			"Local\" show it). One record = lease-new (or tx-new) with 1 worker (%d messages), the batch = %d events of 10 new records.",
			cfg.delay, cfg.delayMessages, cfg.delayEvents),
		"The bare SDK loop (the floor): the Go driver with --floor sends, for every message, the requests pkg/idem sent for one new " +
			"message (captured as the store handed them to the client), only the key changed, on the same client and pool; in the " +
			"batch cases ten goroutines send one event's records at once.",
		"Cold start: pkg/idem is the real consumer Lambda (build/host/consumer) from exec to its first Runtime API GET /next, " +
			"under a minimal Runtime API; Powertools is the driver's `cold` scenario from exec to its JSON line, after importing the " +
			"Lambda-like consumer module (client, persistence layer, batch processor, decorated handler). RSS is VmRSS at that moment. " +
			"The first run of each is discarded.",
		"Batch: sqsbatch runs 10 records at once (its default); Powertools Python's BatchProcessor one at a time (its default; " +
			"the concurrent variant, AsyncBatchProcessor with a thread pool, is our wiring), TypeScript's all at once (its default).",
		"n/a: Powertools has no transactional mode, and its drivers keep the local cache off (use_local_cache=False).",
		"The Go driver turns off the SDK's response CRC32 check (DynamoDB Local sends none on errors, see emu.Clients) and logs " +
			"sqsbatch's records at WARN (Powertools logs nothing per record).",
	}
}
