// Package driver is the contract between the bench orchestrator and its
// drivers (the Go driver, and the Powertools drivers in
// integration/bench/powertools): the scenarios, and the one JSON object a
// driver prints on stdout per run. integration/bench/powertools/README.md
// describes the same contract for the Python and TypeScript sides.
package driver

// Scenarios every driver runs.
const (
	LeaseNew = "lease-new" // N new keys through the idempotent function, from W workers
	LeaseDup = "lease-dup" // the same N keys, already completed (seeded first, unmeasured)
	BatchNew = "batch-new" // R SQS events of 10 new records through the batch handler
	BatchDup = "batch-dup" // the same, every record a duplicate
	Cold     = "cold"      // no loop: build what a Lambda init builds, print, exit
)

// Scenarios of the Go driver only: Powertools has no transactional mode, and
// its drivers keep the local cache off.
const (
	CacheDup = "cache-dup" // lease-dup with the Guard's cache, seeded by the same Guard
	TxNew    = "tx-new"    // N new keys through DoTx: the receipt and one ledger write
	TxDup    = "tx-dup"    // the same N keys, already committed
	// BatchTxNew is batch-new in transactional mode (sqsbatch.NewTx): each
	// record commits its receipt and one ledger write.
	BatchTxNew = "batch-tx-new"
)

// Exit statuses of a driver.
const (
	ExitOK      = 0 // ok
	ExitFailed  = 1 // finished but failed its check: the JSON has ok false and failure
	ExitBadRun  = 2 // bad usage or setup: no JSON, the reason on stderr
	BatchSize   = 10
	SystemGo    = "pkg-idem"
	SystemPy    = "powertools-python"
	SystemTS    = "powertools-ts"
	SystemRedis = "pkg-idem-redis"
	// SystemFloor is the Go driver with --floor: the bare SDK sending the
	// requests pkg/idem sent for a message, only the key changed.
	SystemFloor = "sdk-floor"
)

// Result is the JSON object a driver prints: one line on stdout.
type Result struct {
	System   string `json:"system"`
	Scenario string `json:"scenario"`
	Workers  int    `json:"workers"`
	Messages int    `json:"messages"` // N, or 10·R; 0 for cold

	Validation string `json:"validation,omitempty"`
	// Seconds is the wall time of the measured loop (cold: driver start to
	// ready, in-process).
	Seconds float64 `json:"seconds"`
	// CPUSeconds is user+sys of the whole process during the loop (cold:
	// everything until ready).
	CPUSeconds float64 `json:"cpu_seconds"`
	// ProcessSeconds (cold) is exec to ready as seen from inside.
	ProcessSeconds float64 `json:"process_seconds,omitempty"`
	RSSKB          int64   `json:"rss_kb"`
	RSSPeakKB      int64   `json:"rss_peak_kb"`
	Errors         int     `json:"errors"`
	OK             bool    `json:"ok"`
	Failure        string  `json:"failure,omitempty"`

	MsgsPerSecond        float64 `json:"msgs_per_second,omitempty"`
	CPUSecondsPerMessage float64 `json:"cpu_seconds_per_message,omitempty"`
	// Requests are the DynamoDB requests of the loop per operation, counted
	// in the SDK; RequestsTotal those of the whole run (the proxy must see
	// exactly these).
	Requests           map[string]int `json:"requests"`
	RequestsPerMessage float64        `json:"requests_per_message"`
	RequestsTotal      map[string]int `json:"requests_total,omitempty"`

	PerEventSeconds float64 `json:"per_event_seconds,omitempty"`
	Events          int     `json:"events,omitempty"`
	BatchSize       int     `json:"batch_size,omitempty"`
	Processor       string  `json:"processor,omitempty"`
	ProcessorImpl   string  `json:"processor_impl,omitempty"`

	// Versions may hold null (a package the TS driver could not find).
	Versions map[string]*string `json:"versions,omitempty"`
}

// Setup returns the requests of the run outside its measured loop, per
// operation: table creation, warm-up, seeding.
func (r Result) Setup() map[string]int {
	out := make(map[string]int, len(r.RequestsTotal))
	for op, n := range r.RequestsTotal {
		if d := n - r.Requests[op]; d != 0 {
			out[op] = d
		}
	}
	return out
}
