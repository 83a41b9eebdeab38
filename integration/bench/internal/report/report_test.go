package report

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/integration/bench/internal/cpuprof"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{7}, 7},
	} {
		in := append([]float64(nil), tc.in...)
		if got := Median(in); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.in, got, tc.want)
		}
		if in[0] != tc.in[0] {
			t.Errorf("Median reordered its input: %v", in)
		}
	}
	if !math.IsNaN(Median(nil)) {
		t.Error("Median(nil) is not NaN")
	}
}

func TestRatio(t *testing.T) {
	if r, ok := Ratio(1, 4); !ok || r != 0.25 {
		t.Errorf("Ratio(1, 4) = %v %v", r, ok)
	}
	for _, tc := range [][2]float64{{1, 0}, {math.NaN(), 1}, {1, math.NaN()}} {
		if _, ok := Ratio(tc[0], tc[1]); ok {
			t.Errorf("Ratio(%v, %v) is ok", tc[0], tc[1])
		}
	}
	if got := ratio(1, 400); got != "0.003×" {
		t.Errorf("ratio(1, 400) = %q", got)
	}
	if got := ratio(1, 0); got != "n/a" {
		t.Errorf("ratio(1, 0) = %q", got)
	}
}

func TestCollectLeavesFailuresOut(t *testing.T) {
	f := Collect([]Sample{
		{System: Go, Case: LeaseNew1, Repeat: 1, Metrics: map[string]float64{CPUus: 300}},
		{System: Go, Case: LeaseNew1, Repeat: 2, Metrics: map[string]float64{CPUus: 100}},
		{System: Go, Case: LeaseNew1, Repeat: 3, Metrics: map[string]float64{CPUus: 9999}, Failure: "boom"},
		{System: Py, Case: LeaseNew1, Repeat: 1, Failure: "boom"},
	})
	s := f[Key{LeaseNew1, Go}][CPUus]
	if s.Median != 200 || s.Min != 100 || s.Max != 300 || s.N != 2 || s.Failures != 1 {
		t.Errorf("stat %+v", s)
	}
	if !math.IsNaN(f.Get(LeaseNew1, Py, CPUus)) || f.Failures(LeaseNew1, Py) != 1 {
		t.Errorf("a failed-only case: %v, %d failures", f.Get(LeaseNew1, Py, CPUus), f.Failures(LeaseNew1, Py))
	}
	if !math.IsNaN(f.Get(TxNew, Py, CPUus)) {
		t.Error("a case that never ran has a figure")
	}
}

func TestThousands(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -2500: "-2,500"} {
		if got := thousands(v); got != want {
			t.Errorf("thousands(%v) = %q, want %q", v, got, want)
		}
	}
	if got := num("%.0f µs", 12345); got != "12,345 µs" {
		t.Errorf("num = %q", got)
	}
	if got := num("%.1f", math.NaN()); got != "n/a" {
		t.Errorf("num(NaN) = %q", got)
	}
}

// samples are three repeats of every case, with pkg/idem at a fifth of
// Python's CPU and a tenth of its cold start.
func samples() []Sample {
	var out []Sample
	add := func(system, c string, m map[string]float64) {
		for rep := 1; rep <= 3; rep++ {
			mm := map[string]float64{}
			for k, v := range m {
				mm[k] = v * (1 + 0.01*float64(rep-2)) // medians are the middle repeat
			}
			out = append(out, Sample{System: system, Case: c, Repeat: rep, Metrics: mm})
		}
	}
	for _, sys := range []string{Py, TS, Go} {
		cpu := map[string]float64{Py: 1800, TS: 2500, Go: 300}[sys]
		add(sys, LeaseNew1, map[string]float64{WireRPM: 2, CPUus: cpu, MsgsPerS: 400, MsPerMsg: 2.5})
		add(sys, LeaseNew16, map[string]float64{WireRPM: 2, CPUus: cpu, MsgsPerS: 500, RSSMB: 50, MsPerMsg: 1})
		add(sys, LeaseDup1, map[string]float64{WireRPM: 1, CPUus: cpu / 2, MsgsPerS: 800})
		add(sys, LeaseDup16, map[string]float64{WireRPM: 1, CPUus: cpu / 2, MsgsPerS: 900})
		add(sys, BatchNewConc, map[string]float64{WireRPM: 2, CPUus: cpu, MsPerEvt: 20})
		add(sys, BatchDupConc, map[string]float64{WireRPM: 1, CPUus: cpu / 2, MsPerEvt: 10})
		add(sys, DelayOne, map[string]float64{MsPerMsg: 11})
		add(sys, DelayBatchConc, map[string]float64{MsPerEvt: 14})
		add(sys, Cold, map[string]float64{ColdMs: map[string]float64{Py: 200, TS: 250, Go: 5}[sys], RSSMB: map[string]float64{Py: 50, TS: 64, Go: 10}[sys]})
		if sys != Go {
			add(sys, BatchNewSeq, map[string]float64{WireRPM: 2, CPUus: cpu, MsPerEvt: 40})
			add(sys, BatchDupSeq, map[string]float64{WireRPM: 1, CPUus: cpu / 2, MsPerEvt: 20})
			add(sys, DelayBatchSeq, map[string]float64{MsPerEvt: 110})
		}
	}
	add(Go, CacheDup, map[string]float64{WireRPM: 0, CPUus: 4})
	add(Go, TxNew, map[string]float64{WireRPM: 1, CPUus: 250, MsPerMsg: 2})
	add(Go, TxNew16, map[string]float64{WireRPM: 1, CPUus: 200, MsPerMsg: 0.5})
	add(Go, TxDup, map[string]float64{WireRPM: 1, CPUus: 260})
	add(Go, DelayTxOne, map[string]float64{MsPerMsg: 6})
	add(Go, DelayBatchTx, map[string]float64{MsPerEvt: 7, CPUus: 250})
	add(Go, DelayOneLocal, map[string]float64{MsPerMsg: 13})
	add(Go, DelayBatchLocal, map[string]float64{MsPerEvt: 25})
	// The bare SDK loop: a little less CPU than pkg/idem, the same batch.
	add(Floor, LeaseNew1, map[string]float64{WireRPM: 2, CPUus: 280, MsPerMsg: 2.5})
	add(Floor, LeaseNew16, map[string]float64{WireRPM: 2, CPUus: 250, MsPerMsg: 1})
	add(Floor, TxNew, map[string]float64{WireRPM: 1, CPUus: 240, MsPerMsg: 2})
	add(Floor, TxNew16, map[string]float64{WireRPM: 1, CPUus: 150, MsPerMsg: 0.5}) // pkg/idem 1.33×: missed
	add(Floor, DelayOne, map[string]float64{MsPerMsg: 11})
	add(Floor, DelayBatchConc, map[string]float64{MsPerEvt: 13})
	add(Floor, DelayTxOne, map[string]float64{MsPerMsg: 6})
	add(Floor, DelayBatchTx, map[string]float64{MsPerEvt: 6.6})
	return out
}

func TestRender(t *testing.T) {
	meta := Meta{Command: "make bench", Started: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC), Took: 9 * time.Minute,
		Repeats: 3, Messages: 2000, Events: 50, Delay: 5 * time.Millisecond, DelayMessages: 100, DelayEvents: 20, ColdRuns: 5,
		Machine:  Machine{CPU: "AMD EPYC", Cores: 2, MemoryGB: 24, OS: "Debian", LoadStart: "2.0 / 2.0 / 2.0", LoadEnd: "3.0 / 2.5 / 2.0", Load1: []float64{2, 3, 4}},
		Versions: []string{"Go go1.26.8"}, Notes: []string{"a note"}}
	prof := &Profile{Scenario: "lease-new", Workers: 16, Messages: 4000, CPUus: 300, Split: cpuprof.Split{
		Total:   100 * time.Millisecond,
		Self:    map[string]time.Duration{cpuprof.Ours: 3 * time.Millisecond, cpuprof.Runtime: 97 * time.Millisecond},
		Caller:  map[string]time.Duration{cpuprof.Ours: 6 * time.Millisecond, cpuprof.Runtime: 94 * time.Millisecond},
		TopOurs: []cpuprof.Func{{Name: "github.com/exactlyonce/sqsidem/pkg/idem.fingerprint", Self: 3 * time.Millisecond}},
	}}
	md := Render(meta, samples(), prof)
	for _, want := range []string{
		"`make bench`: 2026-11-23 12:00 UTC, 3 repeats, the systems taking turns",
		"load average 2.0 / 2.0 / 2.0 at the start, 3.0 / 2.5 / 2.0 at the end (1-min before each repeat: 2.0, 3.0, 4.0)",
		"| requests per new message = 2 | 2.00 | 2.00 |  | met |",
		"| requests per duplicate answered by the cache = 0 | 0.00 | n/a |  | met |",
		"| CPU per new message ≤ 0.2× Python's (1 worker) | 300 µs | 1,800 µs | 0.17× | met |",
		"| cold start ≤ 1/25 of Python's | 5.0 ms | 200.0 ms | 0.025× | met |",
		"| RSS at ready ≤ 0.3× Python's | 10.0 MB | 50.0 MB | 0.20× | met |",
		"| 10-record batch ≤ 1.2× one record, with modelled latency (lease; reference: the bare SDK's) | 1.27× | 1.18× |  | missed |",
		"| 10-record batch ≤ 1.2× one record, with modelled latency (transactional; reference: the bare SDK's) | 1.17× | 1.10× |  | met |",
		"| CPU per new message ≤ 1.1× the bare SDK loop's (lease, 1 worker) | 300 µs | 280 µs | 1.07× | met |",
		"| CPU per new message ≤ 1.1× the bare SDK loop's (transactional, 16 workers) | 200 µs | 150 µs | 1.33× | missed |",
		"| wall time per new message ≤ 1.1× the bare SDK loop's (lease, 16 workers) | 1.00 ms | 1.00 ms | 1.00× | met |",
		"| lease: 10 records ÷ one record | 1.27× | 1.18× | 1.08× |",
		"| transactional: one event of 10 records, ms | 7.0 | 6.6 | 1.06× |",
		"| 10 records ÷ one record | 1.92× | n/a | n/a |",
		"| pkg/idem's own code ≤ 10% of the CPU (profile, self) | 3.0% |  |  | met |",
		"| 2,000 new keys, 1 worker | 400 | 400 | 400 | 1.00× | 1.00× |",
		"| duplicate answered by the local cache | 0.00 | n/a | n/a | n/a | n/a |",
		"| all new | 20.0 | 40.0 | 20.0 | 0.50× | 1.00× |", // Python's default batch is sequential
		"| Powertools Python AsyncBatchProcessor + 10 threads | 20.0 | 10.0 | 1,800 | 900 | 14.0 | 1.27× |",
		"| pkg/idem | 3.0% | 9 | 6.0% | 18 |",
		"`pkg/idem.fingerprint` 3.0%",
		"- a note",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(md, "Redis") {
		t.Error("a Redis table without Redis samples")
	}
	if t.Failed() {
		t.Log(md)
	}
}

func TestTargetsMissed(t *testing.T) {
	s := samples()
	for i := range s {
		if s[i].System == Go && s[i].Case == LeaseDup1 {
			s[i].Metrics[CPUus] = 500 // more than 0.25× Python's 900
		}
		if s[i].System == Go && s[i].Case == TxDup {
			s[i].Metrics[WireRPM] = 2
		}
	}
	met := map[string]bool{}
	for _, tg := range Targets(Collect(s), nil) {
		met[tg.Name] = tg.Met
	}
	if met["CPU per duplicate ≤ 0.25× Python's (1 worker)"] || met["requests per transactional duplicate = 1"] {
		t.Errorf("missed targets reported met: %v", met)
	}
	if !met["CPU per duplicate ≤ 0.25× Python's (16 workers)"] {
		t.Errorf("a met target reported missed: %v", met)
	}
	if _, ok := met["pkg/idem's own code ≤ 10% of the CPU (profile, self)"]; ok {
		t.Error("a profile target without a profile")
	}
}

func TestNumJSON(t *testing.T) {
	b, err := json.Marshal([]Num{1.5, Num(math.NaN()), Num(math.Inf(1))})
	if err != nil || string(b) != "[1.5,null,null]" {
		t.Errorf("%s %v", b, err)
	}
}
