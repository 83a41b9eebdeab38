// Package report turns the runs of `make bench` into figures (medians over
// the repeats, ratios pkg/idem ÷ Powertools) and renders them as Markdown.
// It is pure: the orchestrator (integration/bench/cmd/bench) runs things and
// hands it Samples.
package report

import (
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/exactlyonce/sqsidem/integration/bench/internal/driver"
)

// Systems, as the drivers name themselves.
const (
	Go    = driver.SystemGo
	Py    = driver.SystemPy
	TS    = driver.SystemTS
	Redis = driver.SystemRedis
	Floor = driver.SystemFloor
)

// Metrics of a sample.
const (
	WireRPM   = "wire_requests_per_message"   // counted by the proxy
	DriverRPM = "driver_requests_per_message" // counted in the driver's SDK (cross-check)
	MsgsPerS  = "msgs_per_second"
	CPUus     = "cpu_us_per_message"
	MsPerMsg  = "ms_per_message" // wall time of the loop per message
	MsPerEvt  = "ms_per_event"
	ColdMs    = "cold_start_ms" // exec to ready
	RSSMB     = "rss_mb"        // at ready (cold) or after the loop
	PeakMB    = "rss_peak_mb"
	// ItemBytes and LedgerBytes are the mean size (DynamoDB's item size
	// rules) of the receipts a run left in its table, and of its ledger
	// items (the transactional effect's): the inputs of the cost model.
	ItemBytes   = "item_bytes"
	LedgerBytes = "ledger_item_bytes"
	// opRPM prefixes the requests per message of one operation, counted in
	// the driver's loop (OpRPM).
	opRPM = "requests_per_message."
)

// OpRPM is the metric of the requests per message of operation op.
func OpRPM(op string) string { return opRPM + op }

// Ops are the operations of a case's OpRPM metrics, and their requests per
// message.
func (f Figures) Ops(c, system string) map[string]float64 {
	out := map[string]float64{}
	for m, st := range f[Key{c, system}] {
		if op, ok := strings.CutPrefix(m, opRPM); ok && st.N > 0 {
			out[op] = st.Median
		}
	}
	return out
}

// Sample is one run of one case by one system.
type Sample struct {
	System  string             `json:"system"`
	Case    string             `json:"case"`
	Repeat  int                `json:"repeat"`
	Metrics map[string]float64 `json:"metrics"`
	// Failure is set when the run failed its check, its wire count differed
	// from the driver's, or it did not run; its metrics are not used.
	Failure string `json:"failure,omitempty"`
}

// Stat is a metric over the repeats of a case.
type Stat struct {
	Median   float64 `json:"median"`
	Min      float64 `json:"min"`
	Max      float64 `json:"max"`
	N        int     `json:"n"`
	Failures int     `json:"failures,omitempty"`
}

// Median of xs; NaN for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Ratio is ours ÷ theirs; ok is false when either is missing or theirs is
// zero (a ratio to nothing says nothing).
func Ratio(ours, theirs float64) (float64, bool) {
	if math.IsNaN(ours) || math.IsNaN(theirs) || theirs == 0 {
		return 0, false
	}
	return ours / theirs, true
}

// Key names a case of a system.
type Key struct{ Case, System string }

// Figures are the medians of every case, system and metric.
type Figures map[Key]map[string]Stat

// Collect takes the median of each metric over the successful samples of
// each case and system. A failed sample counts in Failures only.
func Collect(samples []Sample) Figures {
	vals := map[Key]map[string][]float64{}
	fails := map[Key]int{}
	for _, s := range samples {
		k := Key{s.Case, s.System}
		if vals[k] == nil {
			vals[k] = map[string][]float64{}
		}
		if s.Failure != "" {
			fails[k]++
			continue
		}
		for m, v := range s.Metrics {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				vals[k][m] = append(vals[k][m], v)
			}
		}
	}
	f := Figures{}
	for k, ms := range vals {
		f[k] = map[string]Stat{}
		for m, xs := range ms {
			f[k][m] = Stat{Median: Median(xs), Min: slices.Min(xs), Max: slices.Max(xs), N: len(xs), Failures: fails[k]}
		}
		if len(ms) == 0 {
			f[k]["_"] = Stat{Failures: fails[k]}
		}
	}
	return f
}

// Get returns the median of a metric, NaN when there is none.
func (f Figures) Get(c, system, metric string) float64 {
	if s, ok := f[Key{c, system}][metric]; ok && s.N > 0 {
		return s.Median
	}
	return math.NaN()
}

// Failures returns how many runs of a case and system failed.
func (f Figures) Failures(c, system string) int {
	for _, s := range f[Key{c, system}] {
		return s.Failures
	}
	return 0
}
