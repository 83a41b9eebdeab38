package report

import (
	"encoding/json"
	"fmt"
	"math"
)

// The targets of the issue that asked for this benchmark, checked on the
// medians of one run.
const (
	maxCPUNewRatio  = 0.2
	maxCPUDupRatio  = 0.25
	maxColdRatio    = 1.0 / 25
	maxRSSRatio     = 0.3
	maxBatchSpeedup = 1.2
	maxOursShare    = 0.10
	maxFloorRatio   = 1.1
)

// Target is one checked target, as it goes into results.json. Reference
// is what it is measured against: Powertools Python's figure, or the bare
// SDK loop's (the target's name says which).
type Target struct {
	Name      string `json:"name"`
	Ours      Num    `json:"ours"`
	Reference Num    `json:"reference"`
	Met       bool   `json:"met"`
	text      [4]string
}

// Num is a figure that may not exist (NaN): null in JSON.
type Num float64

// MarshalJSON implements json.Marshaler.
func (n Num) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(n)) || math.IsInf(float64(n), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(n))
}

// Targets checks every target on the figures (and the profile, when there
// is one).
func Targets(f Figures, prof *Profile) []Target {
	var out []Target
	requests := func(name, c string, want float64) {
		g, p := f.Get(c, Go, WireRPM), f.Get(c, Py, WireRPM)
		out = append(out, Target{Name: name, Ours: Num(g), Reference: Num(p), Met: math.Abs(g-want) < 0.005,
			text: [4]string{num("%.2f", g), num("%.2f", p), ""}})
	}
	requests("requests per new message = 2", LeaseNew1, 2)
	requests("requests per duplicate = 1", LeaseDup1, 1)
	requests("requests per duplicate answered by the cache = 0", CacheDup, 0)
	requests("requests per transactional new message = 1", TxNew, 1)
	requests("requests per transactional duplicate = 1", TxDup, 1)

	relative := func(name string, g, p, limit float64, format string) {
		r, ok := Ratio(g, p)
		out = append(out, Target{Name: name, Ours: Num(g), Reference: Num(p), Met: ok && r <= limit,
			text: [4]string{num(format, g), num(format, p), ratio(g, p)}})
	}
	cpu := func(c string) (float64, float64) { return f.Get(c, Go, CPUus), f.Get(c, Py, CPUus) }
	g, p := cpu(LeaseNew1)
	relative("CPU per new message ≤ 0.2× Python's (1 worker)", g, p, maxCPUNewRatio, "%.0f µs")
	g, p = cpu(LeaseNew16)
	relative("CPU per new message ≤ 0.2× Python's (16 workers)", g, p, maxCPUNewRatio, "%.0f µs")
	g, p = cpu(LeaseDup1)
	relative("CPU per duplicate ≤ 0.25× Python's (1 worker)", g, p, maxCPUDupRatio, "%.0f µs")
	g, p = cpu(LeaseDup16)
	relative("CPU per duplicate ≤ 0.25× Python's (16 workers)", g, p, maxCPUDupRatio, "%.0f µs")
	relative("cold start ≤ 1/25 of Python's", f.Get(Cold, Go, ColdMs), f.Get(Cold, Py, ColdMs), maxColdRatio, "%.1f ms")
	relative("RSS at ready ≤ 0.3× Python's", f.Get(Cold, Go, RSSMB), f.Get(Cold, Py, RSSMB), maxRSSRatio, "%.1f MB")

	// The batch against one record, with the floor's own ratio beside it:
	// what the bare SDK's requests cost on the same machine, the part of
	// the batch's excess that is not the library's.
	for _, b := range []struct{ name, batch, one string }{
		{"10-record batch ≤ 1.2× one record, with modelled latency (lease; reference: the bare SDK's)", DelayBatchConc, DelayOne},
		{"10-record batch ≤ 1.2× one record, with modelled latency (transactional; reference: the bare SDK's)", DelayBatchTx, DelayTxOne},
	} {
		g, fl := speedupOver(b.batch, b.one)(f, Go), speedupOver(b.batch, b.one)(f, Floor)
		out = append(out, Target{Name: b.name, Ours: Num(g), Reference: Num(fl), Met: !math.IsNaN(g) && g <= maxBatchSpeedup,
			text: [4]string{num("%.2f×", g), num("%.2f×", fl), ""}})
	}
	for _, fc := range floorCases {
		relative("CPU per new message ≤ 1.1× the bare SDK loop's ("+fc.label+")",
			f.Get(fc.c, Go, CPUus), f.Get(fc.c, Floor, CPUus), maxFloorRatio, "%.0f µs")
	}
	for _, fc := range floorCases {
		relative("wall time per new message ≤ 1.1× the bare SDK loop's ("+fc.label+")",
			f.Get(fc.c, Go, MsPerMsg), f.Get(fc.c, Floor, MsPerMsg), maxFloorRatio, "%.2f ms")
	}

	if prof != nil {
		s := prof.OursShare()
		out = append(out, Target{Name: "pkg/idem's own code ≤ 10% of the CPU (profile, self)", Ours: Num(s), Reference: Num(math.NaN()),
			Met: s <= maxOursShare, text: [4]string{pct(s), "", ""}})
	}
	for i := range out {
		out[i].text[3] = "missed"
		if out[i].Met {
			out[i].text[3] = "met"
		}
	}
	return out
}

func targets(f Figures, prof *Profile) string {
	var rows [][]string
	for _, t := range Targets(f, prof) {
		rows = append(rows, []string{t.Name, t.text[0], t.text[1], t.text[2], t.text[3]})
	}
	return table([]string{"target", "pkg/idem", "reference (Python, or the bare SDK)", "ratio", ""}, "lrrrl", rows)
}

// Summary is one line per target, for the terminal.
func Summary(f Figures, prof *Profile) string {
	s := ""
	for _, t := range Targets(f, prof) {
		s += fmt.Sprintf("  %-7s %s: %s\n", t.text[3], t.Name, t.text[0])
	}
	return s
}

// floorCases are the cases pkg/idem is measured against the bare SDK loop
// on, on DynamoDB Local.
var floorCases = []struct{ label, c string }{
	{"lease, 1 worker", LeaseNew1},
	{"lease, 16 workers", LeaseNew16},
	{"transactional, 1 worker", TxNew},
	{"transactional, 16 workers", TxNew16},
}
