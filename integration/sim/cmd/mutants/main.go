// Command mutants proves that the simulator can fail: it applies each
// deliberate bug of mutants.go alone — through go test's -overlay, so the
// working tree is never touched — runs the simulator on the mutated
// library until an invariant breaks, and prints a table of bug → the seed
// that caught it and how many schedules that took. It fails when a bug is
// not caught within -seeds schedules, or no longer applies (the code it
// mutates changed: update mutants.go).
//
//	go run ./integration/sim/cmd/mutants [-seeds 100000] [-only substring]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

func main() {
	seeds := flag.Int("seeds", 100000, "schedules each bug must be caught within (make test's budget)")
	only := flag.String("only", "", "run only the bugs whose name contains this")
	flag.Parse()
	if err := run(*seeds, *only); err != nil {
		fmt.Fprintln(os.Stderr, "mutants:", err)
		os.Exit(1)
	}
}

func run(seeds int, only string) error {
	dir, err := os.MkdirTemp("", "sqsidem-mutants-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Printf("| bug | caught by seed | schedules until caught | time |\n|---|---:|---:|---:|\n")
	var missed []string
	for i, m := range mutants {
		if only != "" && !strings.Contains(m.name, only) {
			continue
		}
		start := time.Now()
		seed, err := catch(filepath.Join(dir, fmt.Sprint(i)), m, seeds)
		el := time.Since(start).Round(100 * time.Millisecond)
		switch {
		case err != nil:
			return fmt.Errorf("%s: %w", m.name, err)
		case seed == 0:
			fmt.Printf("| %s | **missed** | > %d | %s |\n", m.name, seeds, el)
			missed = append(missed, m.name)
		default:
			fmt.Printf("| %s | %d | %d | %s |\n", m.name, seed, seed, el)
		}
	}
	if len(missed) > 0 {
		return fmt.Errorf("not caught within %d schedules: %s", seeds, strings.Join(missed, "; "))
	}
	return nil
}

// failing is how the simulator names a failing seed; crashed, a seed whose
// schedule killed the test binary (a panic the handler let escape one of
// its goroutines, or a hung schedule: the simulator's panics name it).
var (
	failing = regexp.MustCompile(`seed (\d+) breaks an invariant`)
	crashed = regexp.MustCompile(`(?m)^panic: .*sim: seed (\d+): `)
)

// catch runs the simulator with m applied and returns the first seed it
// failed at, 0 if none within seeds.
func catch(dir string, m mutant, seeds int) (uint64, error) {
	src, err := os.ReadFile(m.file)
	if err != nil {
		return 0, err
	}
	if n := strings.Count(string(src), m.old); n != 1 {
		return 0, fmt.Errorf("%s holds %q %d times, want once: the mutation no longer applies", m.file, m.old, n)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	mutated := filepath.Join(dir, filepath.Base(m.file))
	if err := os.WriteFile(mutated, []byte(strings.Replace(string(src), m.old, m.new_, 1)), 0o644); err != nil {
		return 0, err
	}
	abs, err := filepath.Abs(m.file)
	if err != nil {
		return 0, err
	}
	overlay, _ := json.Marshal(map[string]map[string]string{"Replace": {abs: mutated}})
	overlayPath := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayPath, overlay, 0o644); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-overlay", overlayPath, "-count=1", "-run", "^TestSimulate$",
		"./integration/sim", "-sim.seeds", fmt.Sprint(seeds))
	out, err := cmd.CombinedOutput()
	match := failing.FindSubmatch(out)
	if match == nil {
		match = crashed.FindSubmatch(out)
	}
	if match != nil {
		var seed uint64
		_, _ = fmt.Sscan(string(match[1]), &seed)
		return seed, nil
	}
	if err != nil {
		// Not an invariant: the mutated code did not build, or the run broke.
		return 0, fmt.Errorf("%w:\n%s", err, tail(out))
	}
	return 0, nil
}

func tail(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}
