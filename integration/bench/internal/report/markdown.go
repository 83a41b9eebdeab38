package report

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/exactlyonce/sqsidem/integration/bench/internal/cpuprof"
)

// Meta is how the figures were obtained.
type Meta struct {
	Command       string        `json:"command"`
	Started       time.Time     `json:"started"`
	Took          time.Duration `json:"took_ns"`
	Repeats       int           `json:"repeats"`
	Messages      int           `json:"messages"` // keys of the lease cases
	Events        int           `json:"events"`   // events of 10 records of the batch cases
	Delay         time.Duration `json:"delay_ns"` // modelled latency per request
	DelayMessages int           `json:"delay_messages"`
	DelayEvents   int           `json:"delay_events"`
	ColdRuns      int           `json:"cold_runs"` // per system and repeat
	Machine       Machine       `json:"machine"`
	Versions      []string      `json:"versions"`
	Notes         []string      `json:"notes,omitempty"`
}

// Machine describes where the run happened.
type Machine struct {
	CPU      string  `json:"cpu"`
	Cores    int     `json:"cores"`
	MemoryGB float64 `json:"memory_gb"`
	OS       string  `json:"os"`
	// Load averages (1, 5, 15 min) at the start and the end, and the
	// 1-minute one before each repeat.
	LoadStart string    `json:"load_start"`
	LoadEnd   string    `json:"load_end"`
	Load1     []float64 `json:"load1_per_repeat"`
}

// Profile is the CPU profile of the Go driver on the new-message path.
type Profile struct {
	Scenario string        `json:"scenario"`
	Samples  int           `json:"samples"`
	Workers  int           `json:"workers"`
	Messages int           `json:"messages"`
	CPUus    float64       `json:"cpu_us_per_message"`
	Split    cpuprof.Split `json:"split"`
}

// OursShare is pkg/idem's own (self) share of the profile's CPU.
func (p *Profile) OursShare() float64 { return p.Split.Share(p.Split.Self[cpuprof.Ours]) }

// Render returns the report: targets, the side-by-side figures, the batch
// variants, where the CPU goes, and how the run was made.
func Render(m Meta, samples []Sample, prof *Profile) string {
	f := Collect(samples)
	var b strings.Builder
	fmt.Fprintf(&b, "## pkg/idem vs Powertools for AWS Lambda, side by side\n\n")
	fmt.Fprintf(&b, "`%s`: %s, %d repeats, the systems taking turns (each repeat starting with the next one), medians; "+
		"one DynamoDB Local behind a counting proxy for every system, and one in-memory store for the modelled latency. Took %s.\n\n",
		m.Command, m.Started.UTC().Format("2006-01-02 15:04 UTC"), m.Repeats, m.Took.Round(time.Second))
	fmt.Fprintf(&b, "Machine: %s, %d cores, %.0f GB, %s; load average %s at the start, %s at the end (1-min before each repeat: %s).\n\n",
		m.Machine.CPU, m.Machine.Cores, m.Machine.MemoryGB, m.Machine.OS, m.Machine.LoadStart, m.Machine.LoadEnd, floats(m.Machine.Load1))
	fmt.Fprintf(&b, "Versions: %s.\n\n", strings.Join(m.Versions, ", "))

	b.WriteString("### Targets\n\n")
	b.WriteString(targets(f, prof))
	b.WriteString("\n### All figures\n\n")
	b.WriteString(sideBySide(f, m))
	b.WriteString("\n### pkg/idem against the floor: the bare SDK loop\n\n")
	b.WriteString(floorTable(f, m))
	b.WriteString("\n### Batch adapters, one SQS event of 10 records\n\n")
	b.WriteString(batchTable(f, m))
	if prof != nil {
		b.WriteString("\n### Where the CPU goes (pkg/idem, new messages)\n\n")
		b.WriteString(profileTable(prof))
	}
	if redis := redisTable(f, m); redis != "" {
		b.WriteString("\n### pkg/idem on Redis (redisstore)\n\n")
		b.WriteString(redis)
	}
	if len(m.Notes) > 0 {
		b.WriteString("\n### Notes\n\n")
		for _, n := range m.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	return b.String()
}

func sideBySide(f Figures, m Meta) string {
	var rows [][]string
	for _, r := range figureRows(m) {
		if r.val == nil {
			rows = append(rows, []string{"**" + r.label + "**", "", "", "", "", ""})
			continue
		}
		g, p, t := r.val(f, Go), r.val(f, Py), r.val(f, TS)
		rows = append(rows, []string{r.label, num(r.format, g), num(r.format, p), num(r.format, t), ratio(g, p), ratio(g, t)})
	}
	return table([]string{"", "pkg/idem", "Powertools Python", "Powertools TS", "pkg/idem ÷ Python", "pkg/idem ÷ TS"}, "lrrrrr", rows)
}

// floorTable is pkg/idem beside the bare SDK sending the same requests
// (the floor): CPU and wall time per message on DynamoDB Local, and the
// batch against one record with the modelled latency.
func floorTable(f Figures, m Meta) string {
	var rows [][]string
	section := func(label string) { rows = append(rows, []string{"**" + label + "**", "", "", ""}) }
	line := func(label string, v value, format string) {
		g, fl := v(f, Go), v(f, Floor)
		rows = append(rows, []string{label, num(format, g), num(format, fl), ratio(g, fl)})
	}
	section("CPU per new message, µs (DynamoDB Local)")
	for _, fc := range floorCases {
		line(fc.label, metric(fc.c, CPUus), "%.0f")
	}
	section("Wall time of the loop per new message, ms (DynamoDB Local)")
	for _, fc := range floorCases {
		line(fc.label, metric(fc.c, MsPerMsg), "%.2f")
	}
	section("With " + m.Delay.String() + " modelled latency per request (in-memory store)")
	line("lease: one record, ms", metric(DelayOne, MsPerMsg), "%.1f")
	line("lease: one event of 10 records, ms", metric(DelayBatchConc, MsPerEvt), "%.1f")
	line("lease: 10 records ÷ one record", speedup(DelayBatchConc), "%.2f×")
	line("transactional: one record, ms", metric(DelayTxOne, MsPerMsg), "%.1f")
	line("transactional: one event of 10 records, ms", metric(DelayBatchTx, MsPerEvt), "%.1f")
	line("transactional: 10 records ÷ one record", speedupOver(DelayBatchTx, DelayTxOne), "%.2f×")
	line("CPU per record of the lease batch, µs", metric(DelayBatchConc, CPUus), "%.0f")
	line("CPU per record of the transactional batch, µs", metric(DelayBatchTx, CPUus), "%.0f")
	section("The lease batch with the latency on DynamoDB Local instead (one SQLite thread answers every request)")
	line("one record, ms", metric(DelayOneLocal, MsPerMsg), "%.1f")
	line("one event of 10 records, ms", metric(DelayBatchLocal, MsPerEvt), "%.1f")
	line("10 records ÷ one record", speedupOver(DelayBatchLocal, DelayOneLocal), "%.2f×")
	return table([]string{"", "pkg/idem", "bare SDK loop", "pkg/idem ÷ floor"}, "lrrr", rows)
}

func batchTable(f Figures, m Meta) string {
	var rows [][]string
	for _, v := range batchVariants {
		rows = append(rows, []string{
			v.label,
			num("%.1f", f.Get(v.newCase, v.system, MsPerEvt)),
			num("%.1f", f.Get(v.dupCase, v.system, MsPerEvt)),
			num("%.0f", f.Get(v.newCase, v.system, CPUus)),
			num("%.0f", f.Get(v.dupCase, v.system, CPUus)),
			num("%.1f", f.Get(v.delayCase, v.system, MsPerEvt)),
			num("%.2f×", speedup(v.delayCase)(f, v.system)),
		})
	}
	d := m.Delay.String()
	return table([]string{"", "new, ms/event", "duplicates, ms/event", "new, CPU µs/record", "duplicates, CPU µs/record",
		"new with " + d + " latency, ms/event", "÷ one record with " + d}, "lrrrrrr", rows)
}

func profileTable(p *Profile) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CPU profile of the Go driver's `%s` loop (%s messages, %d workers, %.0f µs CPU per message; %s samples). "+
		"*Self*: the function the sample was taken in. *Caller*: work of the standard library and of the SDK's "+
		"`feature/dynamodb` helpers charged to the nearest caller outside them (so the hashing, allocation and decoding "+
		"pkg/idem asks for count as pkg/idem's).\n\n",
		p.Scenario, thousands(float64(p.Messages)), p.Workers, p.CPUus, thousands(float64(p.Samples)))
	var rows [][]string
	for _, c := range cpuprof.Categories {
		self, caller := p.Split.Share(p.Split.Self[c]), p.Split.Share(p.Split.Caller[c])
		rows = append(rows, []string{c, pct(self), num("%.0f", self*p.CPUus), pct(caller), num("%.0f", caller*p.CPUus)})
	}
	b.WriteString(table([]string{"code", "self", "self, µs/msg", "caller", "caller, µs/msg"}, "lrrrr", rows))
	if len(p.Split.TopOurs) > 0 {
		b.WriteString("\npkg/idem's own functions by self time: ")
		var fns []string
		for _, fn := range p.Split.TopOurs[:min(6, len(p.Split.TopOurs))] {
			fns = append(fns, fmt.Sprintf("`%s` %s", strings.TrimPrefix(fn.Name, "github.com/exactlyonce/sqsidem/"), pct(p.Split.Share(fn.Self))))
		}
		b.WriteString(strings.Join(fns, ", ") + ".\n")
	}
	return b.String()
}

func redisTable(f Figures, m Meta) string {
	cases := []struct{ label, c string }{
		{"new, 1 worker", LeaseNew1}, {"duplicate, 1 worker", LeaseDup1},
		{"new, 16 workers", LeaseNew16}, {"duplicate, 16 workers", LeaseDup16},
	}
	var rows [][]string
	for _, c := range cases {
		if _, ok := f[Key{c.c, Redis}]; !ok {
			continue
		}
		rows = append(rows, []string{c.label,
			num("%.2f", f.Get(c.c, Redis, WireRPM)),
			num("%.0f", f.Get(c.c, Redis, CPUus)), num("%.0f", f.Get(c.c, Go, CPUus)),
			num("%.0f", f.Get(c.c, Redis, MsgsPerS)), num("%.0f", f.Get(c.c, Go, MsgsPerS))})
	}
	if len(rows) == 0 {
		return ""
	}
	return table([]string{thousands(float64(m.Messages)) + " keys", "round trips per message", "CPU µs/msg, Redis", "CPU µs/msg, DynamoDB",
		"msgs/s, Redis", "msgs/s, DynamoDB"}, "lrrrrr", rows)
}

// table renders a Markdown table; align has one l or r per column.
func table(header []string, align string, rows [][]string) string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(header, " | ") + " |\n|")
	for _, a := range align {
		if a == 'r' {
			b.WriteString("---:|")
		} else {
			b.WriteString("---|")
		}
	}
	b.WriteString("\n")
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return b.String()
}

// num formats v, or "n/a" for a figure that does not exist.
func num(format string, v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	s := fmt.Sprintf(format, v)
	if strings.HasPrefix(format, "%.0f") && math.Abs(v) >= 1000 {
		s = thousands(v) + strings.TrimPrefix(format, "%.0f")
	}
	return s
}

func ratio(ours, theirs float64) string {
	r, ok := Ratio(ours, theirs)
	if !ok {
		return "n/a"
	}
	if r < 0.1 {
		return fmt.Sprintf("%.3f×", r)
	}
	return fmt.Sprintf("%.2f×", r)
}

func pct(share float64) string { return fmt.Sprintf("%.1f%%", 100*share) }

// thousands formats a whole number with thousands separators: 12,345.
func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

func floats(xs []float64) string {
	if len(xs) == 0 {
		return "n/a"
	}
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.1f", x)
	}
	return strings.Join(parts, ", ")
}
