package report

import "math"

// Cases: a scenario with its settings. The orchestrator runs each for every
// system that has it; the tables below pick them by these names.
const (
	LeaseNew1  = "lease-new w=1"
	LeaseDup1  = "lease-dup w=1"
	LeaseNew16 = "lease-new w=16"
	LeaseDup16 = "lease-dup w=16"
	// pkg/idem only, with GOMAXPROCS=1.
	LeaseNew1P1  = "lease-new w=1 GOMAXPROCS=1"
	LeaseDup1P1  = "lease-dup w=1 GOMAXPROCS=1"
	CacheDup     = "cache-dup w=1"
	TxNew        = "tx-new w=1"
	TxNew16      = "tx-new w=16"
	TxDup        = "tx-dup w=1"
	BatchNewConc = "batch-new concurrent"
	BatchDupConc = "batch-dup concurrent"
	BatchNewSeq  = "batch-new sequential"
	BatchDupSeq  = "batch-dup sequential"
	// With the modelled latency (Meta.Delay per request) of the in-memory
	// store (integration/bench/internal/modelddb), which answers concurrent
	// requests concurrently, as DynamoDB does.
	DelayOne       = "delay lease-new w=1"
	DelayBatchConc = "delay batch-new concurrent"
	DelayBatchSeq  = "delay batch-new sequential"
	DelayTxOne     = "delay tx-new w=1"
	DelayBatchTx   = "delay batch-tx-new concurrent"
	// The same two lease cases on DynamoDB Local behind the proxy's
	// latency (pkg/idem only): what the batch measured there before, one
	// SQLite thread serialising every request.
	DelayOneLocal   = "delay on DynamoDB Local lease-new w=1"
	DelayBatchLocal = "delay on DynamoDB Local batch-new concurrent"
	Cold            = "cold"
)

// defaultBatch is each system's batch case as its documentation sets it
// up: sqsbatch runs 10 records at once; Powertools' Python BatchProcessor
// runs them one after the other, its TypeScript one all at once.
func defaultBatch(system string, concurrent, sequential string) string {
	if system == Py {
		return sequential
	}
	return concurrent
}

// value is how a row gets one system's figure.
type value func(f Figures, system string) float64

func metric(c, m string) value {
	return func(f Figures, system string) float64 { return f.Get(c, system, m) }
}

// goWith is a metric of goCase for pkg/idem and of ptCase for the others.
func goWith(goCase, ptCase, m string) value {
	return func(f Figures, system string) float64 {
		if system == Go {
			return f.Get(goCase, system, m)
		}
		return f.Get(ptCase, system, m)
	}
}

// batchMetric is a metric of each system's default batch case.
func batchMetric(concurrent, sequential, m string) value {
	return func(f Figures, system string) float64 {
		return f.Get(defaultBatch(system, concurrent, sequential), system, m)
	}
}

// speedup is the time of a 10-record event over the time of one record,
// both with the modelled latency: 1 when the records run fully in
// parallel, 10 when they run one after the other.
func speedup(batchCase string) value { return speedupOver(batchCase, DelayOne) }

// speedupOver is speedup against the one-record case oneCase.
func speedupOver(batchCase, oneCase string) value {
	return func(f Figures, system string) float64 {
		r, ok := Ratio(f.Get(batchCase, system, MsPerEvt), f.Get(oneCase, system, MsPerMsg))
		if !ok {
			return math.NaN()
		}
		return r
	}
}

func defaultSpeedup(f Figures, system string) float64 {
	return speedup(defaultBatch(system, DelayBatchConc, DelayBatchSeq))(f, system)
}

// row is a line of the side-by-side table; a row without a value is a
// section heading.
type row struct {
	label  string
	val    value
	format string
}

func figureRows(m Meta) []row {
	n := thousands(float64(m.Messages))
	return []row{
		{label: "DynamoDB requests per message, counted on the wire"},
		{"new message", metric(LeaseNew1, WireRPM), "%.2f"},
		{"duplicate", metric(LeaseDup1, WireRPM), "%.2f"},
		{"duplicate answered by the local cache", metric(CacheDup, WireRPM), "%.2f"},
		{"transactional, new", metric(TxNew, WireRPM), "%.2f"},
		{"transactional, duplicate", metric(TxDup, WireRPM), "%.2f"},
		{"batch of 10 new, per record", batchMetric(BatchNewConc, BatchNewSeq, WireRPM), "%.2f"},
		{"batch of 10 duplicates, per record", batchMetric(BatchDupConc, BatchDupSeq, WireRPM), "%.2f"},
		{label: "Throughput, messages/s (DynamoDB Local on the same cores)"},
		{n + " new keys, 1 worker", metric(LeaseNew1, MsgsPerS), "%.0f"},
		{"the same keys as duplicates, 1 worker", metric(LeaseDup1, MsgsPerS), "%.0f"},
		{n + " new keys, 16 workers", metric(LeaseNew16, MsgsPerS), "%.0f"},
		{"the same keys as duplicates, 16 workers", metric(LeaseDup16, MsgsPerS), "%.0f"},
		{label: "CPU per message, µs (process user+sys over the loop)"},
		{"new, 1 worker", metric(LeaseNew1, CPUus), "%.0f"},
		{"duplicate, 1 worker", metric(LeaseDup1, CPUus), "%.0f"},
		{"new, 16 workers", metric(LeaseNew16, CPUus), "%.0f"},
		{"duplicate, 16 workers", metric(LeaseDup16, CPUus), "%.0f"},
		{"new, 1 worker, pkg/idem with GOMAXPROCS=1", goWith(LeaseNew1P1, LeaseNew1, CPUus), "%.0f"},
		{"duplicate, 1 worker, pkg/idem with GOMAXPROCS=1", goWith(LeaseDup1P1, LeaseDup1, CPUus), "%.0f"},
		{"duplicate answered by the local cache", metric(CacheDup, CPUus), "%.1f"},
		{"transactional, new", metric(TxNew, CPUus), "%.0f"},
		{"transactional, duplicate", metric(TxDup, CPUus), "%.0f"},
		{"batch of 10 new, per record", batchMetric(BatchNewConc, BatchNewSeq, CPUus), "%.0f"},
		{"batch of 10 duplicates, per record", batchMetric(BatchDupConc, BatchDupSeq, CPUus), "%.0f"},
		{label: "One SQS event of 10 records through the batch adapter, ms (default processor)"},
		{"all new", batchMetric(BatchNewConc, BatchNewSeq, MsPerEvt), "%.1f"},
		{"all duplicates", batchMetric(BatchDupConc, BatchDupSeq, MsPerEvt), "%.1f"},
		{label: "With " + m.Delay.String() + " modelled DynamoDB latency per request (in-memory store, concurrent as DynamoDB)"},
		{"one record, ms", metric(DelayOne, MsPerMsg), "%.1f"},
		{"one event of 10 new records, ms", batchMetric(DelayBatchConc, DelayBatchSeq, MsPerEvt), "%.1f"},
		{"10 records ÷ one record", defaultSpeedup, "%.2f×"},
		{label: "Cold start and memory"},
		{"cold start: exec → ready, ms", metric(Cold, ColdMs), "%.1f"},
		{"RSS at ready, MB", metric(Cold, RSSMB), "%.1f"},
		{"RSS after " + n + " new messages, 16 workers, MB", metric(LeaseNew16, RSSMB), "%.1f"},
	}
}

// batchVariant is a line of the batch table: a system with one processor.
type batchVariant struct {
	system, label               string
	newCase, dupCase, delayCase string
}

var batchVariants = []batchVariant{
	{Go, "pkg/idem sqsbatch, 10 at once (default)", BatchNewConc, BatchDupConc, DelayBatchConc},
	{Py, "Powertools Python BatchProcessor, one at a time (default)", BatchNewSeq, BatchDupSeq, DelayBatchSeq},
	{Py, "Powertools Python AsyncBatchProcessor + 10 threads", BatchNewConc, BatchDupConc, DelayBatchConc},
	{TS, "Powertools TS BatchProcessor, in parallel (default)", BatchNewConc, BatchDupConc, DelayBatchConc},
	{TS, "Powertools TS BatchProcessor, one at a time", BatchNewSeq, BatchDupSeq, DelayBatchSeq},
}
