package chaos

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Header describes the run as a whole, for the report.
type Header struct {
	Title    string
	Started  time.Time
	Took     time.Duration
	Machine  string // cores, memory
	Load     string // load averages when measured
	Settings string // the flags
	Endpoint string // emulators or AWS_ENDPOINT_URL
	Chart    string // file name of the chart
}

// WriteReport writes the Markdown report of the runs.
func WriteReport(w io.Writer, h Header, runs []*Result) {
	fmt.Fprintf(w, "# %s\n\n", h.Title)
	fmt.Fprintf(w, "- started %s, took %s\n- machine: %s; load average %s\n- endpoints: %s\n- settings: `%s`\n- chart: [%s](%s)\n\n",
		h.Started.Format(time.RFC3339), h.Took.Round(time.Second), h.Machine, h.Load, h.Endpoint, h.Settings, h.Chart, h.Chart)
	summary(w, runs)
	for _, r := range runs {
		section(w, r)
	}
}

func summary(w io.Writer, runs []*Result) {
	fmt.Fprint(w, "## Summary\n\n| |")
	for _, r := range runs {
		fmt.Fprintf(w, " %s |", r.Label())
	}
	fmt.Fprint(w, "\n|---|")
	for range runs {
		fmt.Fprint(w, "---:|")
	}
	fmt.Fprintln(w)
	for _, row := range rows(runs, true) {
		fmt.Fprintf(w, "| %s |", row.label)
		for _, c := range row.cells {
			fmt.Fprintf(w, " %s |", strings.ReplaceAll(strings.ReplaceAll(c, "|", `\|`), "\n", "<br>"))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
}

// tableRow is a line of the side-by-side table: one cell per run; a cell
// of several lines separates them with \n.
type tableRow struct {
	label string
	cells []string
}

// rows are the side-by-side table of runs; md: for Markdown (bold
// verdicts, longer lines).
func rows(runs []*Result, md bool) []tableRow {
	var out []tableRow
	line := func(label string, f func(r *Result) string) {
		rw := tableRow{label: label}
		for _, r := range runs {
			rw.cells = append(rw.cells, f(r))
		}
		out = append(out, rw)
	}
	lease := func(f func(r *Result) string) func(r *Result) string {
		return func(r *Result) string {
			if r.Policy == "" {
				return "-"
			}
			return f(r)
		}
	}
	width := 60 // of a reason on the terminal
	if md {
		width = 100
	}
	line("verdict", func(r *Result) string {
		v := "invariant holds"
		if len(r.Problems) > 0 {
			v = fmt.Sprintf("BROKEN (%d problems)", len(r.Problems))
		}
		if md {
			v = "**" + v + "**"
		}
		return v
	})
	line("unknown-outcome policy", func(r *Result) string { return PolicyShort(r.Policy) })
	line("consumer processes × invocations at once", processesLine)
	line("keys", func(r *Result) string {
		return fmt.Sprintf("%s (+%d poison, +%d malformed messages)", thousands(r.Keys), r.Poison, r.Malformed)
	})
	line("first send → drained", func(r *Result) string { return r.Elapsed.Round(100 * time.Millisecond).String() })
	line("deliveries", func(r *Result) string { return thousands(int(r.Deliveries)) })
	line("throughput (deliveries / first send → drained)", func(r *Result) string { return fmt.Sprintf("%.0f msgs/s", r.Throughput()) })
	line("steady throughput (median of 10 s windows)", func(r *Result) string {
		return fmt.Sprintf("%.0f msgs/s", SteadyRate(r.Samples, 10*time.Second))
	})
	line("latency send → effect p50 / p99 / max", func(r *Result) string {
		l := r.Account.Latency
		return fmt.Sprintf("%s / %s / %s", ms(l.P50), ms(l.P99), ms(l.Max))
	})
	line("DynamoDB requests per delivery", func(r *Result) string { return perDelivery(r) })
	line("applied", func(r *Result) string {
		if v := r.Resolution; v != nil {
			return fmt.Sprintf("%s\n%s after the resolution", thousands(r.Account.Applied), thousands(v.AppliedAfter))
		}
		return thousands(r.Account.Applied)
	})
	line("double effects", func(r *Result) string {
		return fmt.Sprintf("%d (%d unexplained)", r.Account.DoubleEffects, len(r.Account.Unexplained))
	})
	line("double effects by class (most direct cause)", func(r *Result) string { return byCauseLine(r.Account, "\n") })
	line("records reconciled / held (consumers' outcomes)", lease(func(r *Result) string {
		return fmt.Sprintf("%s / %s", thousands(r.Outcomes["reconciled"]), thousands(r.Outcomes["held"]))
	}))
	line("held keys", lease(func(r *Result) string {
		if r.Policy != PolicyHold {
			return thousands(len(r.Account.Held))
		}
		poison := 0
		if r.Resolution != nil {
			poison = r.Resolution.HeldPoison
		}
		return fmt.Sprintf("%s (%d poison, %d held by a direct copy only)\n%s dead letters held", thousands(len(r.Account.Held)), poison, len(r.Account.HeldDirect), thousands(r.Account.HeldDead))
	}))
	line("resolved done / not-done", lease(func(r *Result) string {
		v := r.Resolution
		if v == nil {
			return "-"
		}
		return fmt.Sprintf("%s / %s\n%s sent again (%d rounds, %s)\n%s of %s held keys applied once in the end",
			thousands(v.Done), thousands(v.NotDone), thousands(v.Redriven), v.Rounds, v.Took.Round(100*time.Millisecond),
			thousands(v.AppliedOnce), thousands(v.Held-v.HeldPoison))
	}))
	line("lost", func(r *Result) string { return fmt.Sprint(len(r.Account.Lost)) })
	line("partner calls / applied / lookups", lease(func(r *Result) string {
		p := r.Partner
		return fmt.Sprintf("%s / %s / %s", thousands(p.Calls), thousands(p.Applied), thousands(p.Lookups))
	}))
	line("partner faults", lease(func(r *Result) string {
		p := r.Partner
		return fmt.Sprintf("refused %d, lost replies %d, slow %d\nwhile down: %d calls, %d lookups refused", p.Refused, p.LostReplies, p.SlowReplies, p.DownCalls, p.DownLookups)
	}))
	line("partner outage", lease(func(r *Result) string { return partnerOutageLine(r) }))
	line("DynamoDB faults", func(r *Result) string { return kv(r.DynamoFault) })
	line("store backoff", func(r *Result) string {
		if r.StoreBackoff == "" {
			return "off"
		}
		return "on, base " + r.StoreBackoff
	})
	line("dead-letter queue", dlqLine)
	line("DLQ by reason", func(r *Result) string {
		var parts []string
		for _, c := range r.Account.DLQ {
			parts = append(parts, fmt.Sprintf("%s × %s", thousands(c.Count), cut(strings.ReplaceAll(c.Reason, ": consumer#…", ""), width)))
		}
		if len(parts) == 0 {
			return "none"
		}
		return strings.Join(parts, "\n")
	})
	line("left in the queue / in flight", func(r *Result) string { return fmt.Sprintf("%d / %d", r.EndVisible, r.EndInFlight) })
	return out
}

// processesLine is the mapping's consumer processes and how many
// invocations each ran at once.
func processesLine(r *Result) string {
	per := max(r.PerProcess, 1)
	if per == 1 {
		return fmt.Sprintf("%d × 1", r.Processes)
	}
	return fmt.Sprintf("%d × %d (AWS_LAMBDA_MAX_CONCURRENCY=%d)", r.Processes, per, per)
}

// byCauseLine is the double effects by the short name of their most
// direct cause.
func byCauseLine(a Account, sep string) string {
	var parts []string
	for _, c := range a.ByCause() {
		parts = append(parts, fmt.Sprintf("%s %d", ShortClass(c.Reason), c.Count))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, sep)
}

func partnerFaultsLine(r *Result) string {
	p := r.Partner
	return fmt.Sprintf("refused %d, lost replies %d, slow %d (answered after %s), refused while down: %d calls, %d lookups",
		p.Refused, p.LostReplies, p.SlowReplies, r.PartnerSlowFor, p.DownCalls, p.DownLookups)
}

func partnerOutageLine(r *Result) string {
	d := r.PartnerDown
	if d[1] <= d[0] {
		return "none"
	}
	return fmt.Sprintf("%s from +%s (the lease: %s)", (d[1] - d[0]).Round(100*time.Millisecond), d[0].Round(100*time.Millisecond), r.Lease)
}

// cut cuts s to n runes.
func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func section(w io.Writer, r *Result) {
	per := ""
	if r.PerProcess > 1 {
		per = fmt.Sprintf(", %d invocations per process", r.PerProcess)
	}
	if r.Policy == "" {
		fmt.Fprintf(w, "## %s mode%s\n\n", r.Mode, per)
	} else {
		fmt.Fprintf(w, "## %s mode, %s policy%s\n\n%s\n\n", r.Mode, r.Policy, per, PolicyText(r.Policy))
	}
	if len(r.Problems) > 0 {
		fmt.Fprintln(w, "**The invariant broke:**")
		fmt.Fprintln(w)
		for _, p := range r.Problems {
			fmt.Fprintf(w, "- %s\n", p)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "### What was thrown at it")
	fmt.Fprintln(w)
	p := r.Publish
	kills := map[string]int{}
	count := map[string]int{}
	for _, e := range r.Events {
		count[e.Kind]++
		if e.Kind == EventKill {
			kills[e.Point]++
		}
	}
	inv := max(r.Invocations, 1)
	fmt.Fprintf(w, "- producer: %s messages sent in %s runs (%s each on average); %d runs repeated after an error, a timeout or unsent messages%s\n",
		thousands(int(p.Sent)), thousands(int(p.Runs)), ms(p.RunTime), p.Reruns, reasons(p.RerunWhy))
	fmt.Fprintf(w, "- duplicates: %s raw copies from another upstream; %s keys in re-triggered producer runs, %s of them skipped by the producer's guard\n",
		thousands(int(p.Raw)), thousands(int(p.Retriggered)), thousands(int(p.Skipped)))
	if r.PerProcess > 1 {
		fmt.Fprintf(w, "- consumer processes: %s; every pool's processes run %d invocations at once (AWS_LAMBDA_MAX_CONCURRENCY=%d), and a kill or a timeout takes the process and every invocation in it\n",
			processesLine(r), r.PerProcess, r.PerProcess)
	}
	fmt.Fprintf(w, "- same key on 8 instances at the same moment: %d keys (%s deliveries)\n", p.FanOuts, thousands(int(p.FanOuts*8)))
	fmt.Fprintf(w, "- SIGKILL: %d of %s invocations (%.2f%%): %d before the effect, %d after the effect (before the receipt), %d mid-batch\n",
		count[EventKill], thousands(int(r.Invocations)), 100*float64(count[EventKill])/float64(inv),
		kills[PointBeforeEffect], kills[PointAfterEffect], kills["kill-after"])
	if r.PerProcess > 1 {
		fmt.Fprintf(w, "- killed with their process (another invocation in it killed or timed out): %d invocations\n", count[EventProcess])
	}
	fmt.Fprintf(w, "- SIGSTOP zombies: %d (%.2f%% of the %s batches from the queue), frozen past a 1 s lease and taken over\n",
		count[EventFreeze], 100*float64(count[EventFreeze])/float64(max(r.Batches, 1)), thousands(int(r.Batches)))
	fmt.Fprintf(w, "- harness kills at the function timeout: %d; other crashes: %d\n", count[EventTimeout], count[EventCrash])
	fmt.Fprintf(w, "- DynamoDB faults on the Lambdas' %s requests: %s\n", thousands(r.DynamoTotal), kv(r.DynamoFault))
	if r.Policy != "" {
		fmt.Fprintf(w, "- partner faults on its %s calls: %s\n", thousands(r.Partner.Calls), partnerFaultsLine(r))
		fmt.Fprintf(w, "- partner outage (every call and lookup refused): %s\n", partnerOutageLine(r))
	}
	fmt.Fprintf(w, "- poison keys %d, malformed messages %d\n\n", r.Poison, r.Malformed)

	fmt.Fprintln(w, "### Outcomes")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "- records logged by the consumers: %s\n", kv(r.Outcomes))
	fmt.Fprintf(w, "- effects without their own receipt: %s\n", kv(r.Account.Windows))
	if a := r.Account; a.Reruns > 0 {
		fmt.Fprintf(w, "- reruns (an unknown outcome run again under retry, counted): %s; not allowed by the policy: %d keys; keys applied twice with none counted: %d\n",
			thousands(a.Reruns), len(a.RerunsBarred), len(a.Uncounted))
	}
	l := r.Account.Latency
	fmt.Fprintf(w, "- end-to-end latency, send → effect, over %s keys applied once: p50 %s, p99 %s, max %s\n\n", thousands(l.N), ms(l.P50), ms(l.P99), ms(l.Max))

	fmt.Fprintln(w, "### Double effects by cause")
	fmt.Fprintln(w)
	if len(r.Account.Doubled) == 0 {
		fmt.Fprintln(w, "None.")
	} else {
		for _, c := range r.Account.ByCause() {
			fmt.Fprintf(w, "- %s: %d\n", c.Reason, c.Count)
		}
		fmt.Fprintln(w, "\n| key | applied | cause (most direct first) |\n|---|---:|---|")
		for _, d := range r.Account.Doubled {
			var cs []string
			for _, c := range d.Causes {
				cs = append(cs, c.Text)
			}
			if len(cs) == 0 {
				cs = []string{"**unexplained**"}
			}
			fmt.Fprintf(w, "| %s | %d | %s |\n", d.Key, d.Applied, strings.ReplaceAll(strings.Join(cs, "; "), "|", `\|`))
		}
	}
	fmt.Fprintln(w)

	if r.Policy != "" {
		p := r.Partner
		fmt.Fprintln(w, "### Partner")
		fmt.Fprintln(w)
		fmt.Fprintf(w, "When the queue had drained: %s calls, %s effects applied on %s keys, %s lookups (Reconcile).\n\n",
			thousands(p.Calls), thousands(p.Applied), thousands(p.Keys), thousands(p.Lookups))
	}
	if v := r.Resolution; v != nil {
		fmt.Fprintln(w, "### Held keys and their resolution")
		fmt.Fprintln(w)
		fmt.Fprintf(w, "- held when the queue had drained (idemctl list --status held): %d keys, %d of them poison; %d dead letters failed as held\n",
			v.Held, v.HeldPoison, r.Account.HeldDead)
		fmt.Fprintf(w, "- looked up at the partner (%d lookups) and resolved with idemctl resolve: %d --done, %d --not-done, %d again after being held again\n",
			v.Lookups, v.Done, v.NotDone, v.Again)
		fmt.Fprintf(w, "- not-done keys sent once more (poison aside): %d, in %d round(s); held keys applied exactly once in the end: %d of %d\n",
			v.Redriven, v.Rounds, v.AppliedOnce, v.Held-v.HeldPoison)
		fmt.Fprintf(w, "- keys applied after the resolution, poison aside: %s of %s\n", thousands(v.AppliedAfter), thousands(r.Keys))
		fmt.Fprintf(w, "- took %s\n", v.Took.Round(100*time.Millisecond))
		for _, p := range v.Problems {
			fmt.Fprintf(w, "- **%s**\n", p)
		}
		fmt.Fprintln(w)
	}

	fmt.Fprintln(w, "### Dead-letter queue by reason")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%s dead letters\n\n", dlqLine(r))
	for _, c := range r.Account.DLQ {
		fmt.Fprintf(w, "- %d × %s\n", c.Count, c.Reason)
	}
	if len(r.Account.DLQKeys) > 0 {
		fmt.Fprintf(w, "- plain keys among them (accounted for, with their reason): %s\n", head(r.Account.DLQKeys))
	}
	fmt.Fprintln(w)

	fmt.Fprintln(w, "### DynamoDB requests")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%s per delivery; by sender and operation: %s\n\n", perDelivery(r), kv(r.Dynamo))

	fmt.Fprintln(w, "### CPU time by process")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	total := 0.0
	for _, c := range r.CPU {
		total += c.Seconds
	}
	fmt.Fprintln(w, "| part | CPU s | ms per delivery |\n|---|---:|---:|")
	for _, c := range r.CPU {
		fmt.Fprintf(tw, "| %s | %.1f | %.2f |\n", c.Part, c.Seconds, 1000*c.Seconds/float64(max(r.Deliveries, 1)))
	}
	fmt.Fprintf(tw, "| total | %.1f | %.2f |\n", total, 1000*total/float64(max(r.Deliveries, 1)))
	tw.Flush()
	fmt.Fprintln(w)
}

// Summary is the text printed at the end of a run: the runs side by
// side, then a line per run and its problems.
func Summary(w io.Writer, runs []*Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "\t")
	for _, r := range runs {
		fmt.Fprintf(tw, "%s\t", r.Label())
	}
	fmt.Fprintln(tw)
	for _, row := range rows(runs, false) {
		lines := make([][]string, len(row.cells))
		n := 1
		for i, c := range row.cells {
			lines[i] = strings.Split(c, "\n")
			n = max(n, len(lines[i]))
		}
		for j := range n {
			label := row.label
			if j > 0 {
				label = ""
			}
			fmt.Fprintf(tw, "%s\t", label)
			for i := range lines {
				cell := ""
				if j < len(lines[i]) {
					cell = lines[i][j]
				}
				fmt.Fprintf(tw, "%s\t", cell)
			}
			fmt.Fprintln(tw)
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, r := range runs {
		verdict := "invariant holds"
		if len(r.Problems) > 0 {
			verdict = "INVARIANT BROKEN"
		}
		l := r.Account.Latency
		fmt.Fprintf(w, "%-19s %s keys, %s deliveries in %s: %.0f msgs/s (steady %.0f); latency p50 %s p99 %s max %s; %s DynamoDB req/delivery; double effects %d (%d unexplained); lost %d; DLQ %s — %s\n",
			r.Label(), thousands(r.Keys), thousands(int(r.Deliveries)), r.Elapsed.Round(100*time.Millisecond), r.Throughput(), SteadyRate(r.Samples, 10*time.Second),
			ms(l.P50), ms(l.P99), ms(l.Max), perDelivery(r), r.Account.DoubleEffects, len(r.Account.Unexplained),
			len(r.Account.Lost), dlqLine(r), verdict)
		for _, p := range r.Problems {
			fmt.Fprintf(w, "    %s\n", p)
		}
	}
}

// dlqLine is the size of the DLQ and its classes (DLQClasses), so that
// two runs compare at a glance: "12 (poison 5, malformed 5, store failure
// 2, other 0)".
func dlqLine(r *Result) string {
	n := 0
	for _, c := range r.Account.DLQ {
		n += c.Count
	}
	parts := make([]string, 0, len(DLQClasses()))
	for _, class := range DLQClasses() {
		parts = append(parts, fmt.Sprintf("%s %s", class, thousands(r.Account.DLQByClass[class])))
	}
	return fmt.Sprintf("%s (%s)", thousands(n), strings.Join(parts, ", "))
}

func perDelivery(r *Result) string {
	if r.Deliveries == 0 {
		return "-"
	}
	consumer := 0
	for k, v := range r.Dynamo {
		if strings.HasPrefix(k, "consumer ") {
			consumer += v
		}
	}
	return fmt.Sprintf("%.2f (consumers alone %.2f)", float64(r.DynamoTotal)/float64(r.Deliveries), float64(consumer)/float64(r.Deliveries))
}

func reasons(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	return " (" + kv(m) + ")"
}

func kv(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := slices.Collect(maps.Keys(m))
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %s", k, thousands(m[k])))
	}
	return strings.Join(parts, ", ")
}

func ms(d time.Duration) string {
	if d >= 10*time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return s
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
