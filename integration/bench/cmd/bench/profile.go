package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/exactlyonce/sqsidem/integration/bench/internal/cpuprof"
	"github.com/exactlyonce/sqsidem/integration/bench/internal/driver"
	"github.com/exactlyonce/sqsidem/integration/bench/internal/report"
)

// profile runs the Go driver's lease-new with a CPU profile of its loop and
// splits the samples by owner (cpuprof). The profile stays in the run's
// directory for `go tool pprof`.
func (r *runner) profile(ctx context.Context, dir string) (*report.Profile, error) {
	table := "bench-profile"
	if err := r.createTable(ctx, table); err != nil {
		return nil, err
	}
	defer r.deleteTable(table)
	path := filepath.Join(dir, "lease-new.cpu.pprof")
	args := []string{"--endpoint", r.proxy.URL(), "--table", table,
		"-n", strconv.Itoa(r.cfg.profileMessages), "-w", strconv.Itoa(r.cfg.profileWorkers), "--cpuprofile", path}
	res, err := r.exec(ctx, report.Go, driver.LeaseNew, args, nil, "profile-lease-new")
	if err != nil {
		return nil, err
	}
	if !res.OK {
		return nil, fmt.Errorf("profile run failed: %s", res.Failure)
	}
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", "tool", "pprof", "-traces", r.cfg.godriver, path)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go tool pprof: %w: %s", err, errOut.String())
	}
	samples, err := cpuprof.ParseTraces(&out)
	if err != nil {
		return nil, err
	}
	split := cpuprof.Classify(samples)
	return &report.Profile{
		// The driver samples at 1 kHz: a sample is 1 ms of the profile.
		Scenario: driver.LeaseNew, Samples: int(split.Total / time.Millisecond), Workers: res.Workers, Messages: res.Messages,
		CPUus: 1e6 * res.CPUSecondsPerMessage, Split: split,
	}, nil
}
