// Command cost prints the cost of a million messages (integration/bench/
// internal/cost) from the figures of a `make bench` run: its results.json
// (by default the latest, .cache/bench/latest.json).
//
//	go run ./integration/bench/cmd/cost [-results FILE] [-memory-mb 256]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/exactlyonce/sqsidem/integration/bench/internal/cost"
	"github.com/exactlyonce/sqsidem/integration/bench/internal/report"
	"github.com/exactlyonce/sqsidem/integration/internal/emu"
)

// results is the part of results.json the cost reads.
type results struct {
	Meta    report.Meta `json:"meta"`
	Figures []struct {
		Case    string                 `json:"case"`
		System  string                 `json:"system"`
		Metrics map[string]report.Stat `json:"metrics"`
	} `json:"figures"`
}

func main() {
	path := flag.String("results", "", "results.json of a make bench run (default .cache/bench/latest.json)")
	memory := flag.Int("memory-mb", cost.DefaultMemoryMB, "the function's memory on Lambda's default compute")
	flag.Parse()
	if err := run(*path, *memory); err != nil {
		fmt.Fprintf(os.Stderr, "cost: %v\n", err)
		os.Exit(1)
	}
}

func run(path string, memoryMB int) error {
	if path == "" {
		root, err := emu.RepoRoot()
		if err != nil {
			return err
		}
		path = filepath.Join(root, ".cache", "bench", "latest.json")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%w (run make bench first)", err)
	}
	var res results
	if err := json.Unmarshal(data, &res); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	f := report.Figures{}
	for _, fig := range res.Figures {
		f[report.Key{Case: fig.Case, System: fig.System}] = fig.Metrics
	}
	fmt.Printf("From the run of %s (`%s`, %s).\n\n", res.Meta.Started.UTC().Format("2006-01-02 15:04 UTC"), res.Meta.Command, path)
	fmt.Print(cost.DefaultPrices.Render(cost.Systems(f, memoryMB)))
	return nil
}
