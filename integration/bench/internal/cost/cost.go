// Package cost is the cost of a million messages, on paper but from the
// figures of a `make bench` run: the requests a message sends, the sizes of
// the items they write (so the write units they are billed), the CPU and
// the time a batch of 10 records takes with the modelled latency, and the
// function's memory, priced for three ways of running the consumer: Lambda
// on demand, the same with the event source mapping's provisioned pollers,
// and Lambda Managed Instances, at 100, 1,000 and 10,000 messages a second.
//
// It is a model, and says so: the prices are named and dated (Prices), and
// each step of the arithmetic is written out in Render's notes.
package cost

import (
	"fmt"
	"math"
	"strings"

	"github.com/exactlyonce/sqsidem/integration/bench/internal/report"
)

// DefaultMemoryMB is the consumer's memory on Lambda's default compute: the
// stack's default (infra/exactlyonce DefaultConfig().MemoryMB).
const DefaultMemoryMB = 256

// Rates are the steady message rates the table prices.
var Rates = []float64{100, 1000, 10000}

// System is one column of the table: a library in one mode, and the
// measured inputs of its cost.
type System struct {
	Name string
	// Requests are the DynamoDB requests per new message, by operation.
	Requests map[string]float64
	// ItemBytes is the mean size of the receipt a new message leaves;
	// EffectBytes that of the item its transactional effect writes (the
	// ledger), 0 in lease mode.
	ItemBytes, EffectBytes float64
	// CPUus is the CPU per record, and BatchMs the wall time of one event
	// of 10 records, both with the modelled latency.
	CPUus, BatchMs float64
	// MemoryMB is the function's memory.
	MemoryMB int
}

// writeOps are the single-item writes: billed by the size of the item
// (the larger of before and after: a receipt only grows).
var writeOps = map[string]bool{"PutItem": true, "UpdateItem": true, "DeleteItem": true}

// WRU is the write request units a new message costs the store: 1 per KB
// (rounded up per item) for a single-item write, 2 per KB per item for a
// transaction. The transaction's effect item is the effect's own cost,
// which it would pay outside a transaction too (1 per KB): that much is
// left out, so that lease and transactional mode compare the idempotency
// alone.
func (s System) WRU() float64 {
	kb := func(b float64) float64 { return math.Max(1, math.Ceil(b/1024)) }
	w := 0.0
	for op, n := range s.Requests {
		switch {
		case writeOps[op]:
			w += n * kb(s.ItemBytes)
		case op == "TransactWriteItems":
			w += n * 2 * kb(s.ItemBytes)
			if s.EffectBytes > 0 {
				w += n * (2*kb(s.EffectBytes) - kb(s.EffectBytes))
			}
		}
	}
	return w
}

// RRU is the read request units a new message costs: strongly consistent
// reads, 1 per 4 KB.
func (s System) RRU() float64 {
	return s.Requests["GetItem"] * math.Max(1, math.Ceil(s.ItemBytes/4096))
}

// Prices are the prices the model assumes, in USD, with where they were
// read and when.
type Prices struct {
	Region, Date string
	// DynamoDB on demand: per write and read request unit, per GB-month
	// stored; receipts are kept RetentionDays, and each item is billed 100
	// bytes of overhead on top of its size.
	WRU, RRU, StorageGBMonth float64
	RetentionDays            float64
	// Lambda on demand (arm64): per GB-second, per request; a function
	// gets one vCPU at VCPUMemoryMB.
	LambdaGBSecond, LambdaRequest float64
	VCPUMemoryMB                  float64
	// Provisioned pollers: per event poller unit hour (one SQS poller is
	// one unit), the messages a second one poller moves (10 polls a second
	// of batches of 10), and the fewest pollers of an SQS mapping.
	PollerHour     float64
	PollerMsgsPerS float64
	MinPollers     int
	// Managed Instances: the instance type, its vCPUs and on-demand
	// hourly price, the management fee on it, the fewest instances (one
	// per AZ), and the CPU utilisation the fleet is sized for.
	Instance            string
	InstanceVCPUs       int
	InstanceHour        float64
	ManagementFee       float64
	MinInstances        int
	InstanceUtilisation float64
	// Sources name where each price was read.
	Sources []string
}

// DefaultPrices are us-east-1's, looked up on 2026-12-02.
var DefaultPrices = Prices{
	Region: "us-east-1", Date: "2026-12-02",
	WRU: 0.625 / 1e6, RRU: 0.125 / 1e6, StorageGBMonth: 0.25, RetentionDays: 7,
	LambdaGBSecond: 0.0000133334, LambdaRequest: 0.20 / 1e6, VCPUMemoryMB: 1769,
	PollerHour: 0.00925, PollerMsgsPerS: 100, MinPollers: 2,
	Instance: "m7g.large", InstanceVCPUs: 2, InstanceHour: 0.0816, ManagementFee: 0.15, MinInstances: 3,
	InstanceUtilisation: 0.5,
	Sources: []string{
		"DynamoDB on demand: $0.625 per million write request units, $0.125 per million read request units " +
			"(since the price cut of 1 November 2024), $0.25 per GB-month, a transactional write 2 units per KB, " +
			"an item billed for storage with 100 bytes of overhead: https://aws.amazon.com/dynamodb/pricing/on-demand/ " +
			"and https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html",
		"Lambda on demand, arm64: $0.0000133334 per GB-second, $0.20 per million requests, one vCPU at 1,769 MB: " +
			"https://aws.amazon.com/lambda/pricing/",
		"Provisioned pollers: $0.00925 per event poller unit hour for SQS (the AWS price list, as quoted by the " +
			"pricing page's SQS example; Kafka's unit is $0.185); a poller moves up to 10 polls a second (1 MB/s, 10 " +
			"concurrent invokes), at least 2 per SQS mapping: https://aws.amazon.com/lambda/pricing/ and " +
			"https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html",
		"Managed Instances: the EC2 on-demand price of the instance plus a 15% management fee, $0.20 per million " +
			"requests, no duration charge; three instances by default (one per AZ): https://aws.amazon.com/lambda/pricing/ " +
			"and https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-scaling.html; m7g.large " +
			"(2 vCPU, 8 GiB, Graviton3) $0.0816 an hour in us-east-1: https://aws.amazon.com/ec2/pricing/on-demand/",
	},
}

// Mode is a way of running the consumer.
type Mode int

const (
	OnDemand Mode = iota
	Provisioned
	ManagedInstances
)

var modeNames = [...]string{OnDemand: "Lambda on demand", Provisioned: "Lambda on demand, provisioned pollers", ManagedInstances: "Lambda Managed Instances"}

func (m Mode) String() string { return modeNames[m] }

// Modes are every Mode, in the table's order.
var Modes = []Mode{OnDemand, Provisioned, ManagedInstances}

// Cost is what a million messages cost one system in one mode at one rate.
type Cost struct {
	DynamoDB, Compute, Fleet float64 // USD per million messages
	// Units is the pollers or instances the rate needs (0 on demand).
	Units int
}

// Total is the sum.
func (c Cost) Total() float64 { return c.DynamoDB + c.Compute + c.Fleet }

// batch is the records of one invocation (the stack's BatchSize).
const batch = 10

// Of prices a million messages of s in mode m at rate messages a second.
func (p Prices) Of(s System, m Mode, rate float64) Cost {
	const million = 1e6
	var c Cost
	storageGB := (s.ItemBytes + 100) / (1 << 30)
	c.DynamoDB = million * (s.WRU()*p.WRU + s.RRU()*p.RRU + storageGB*p.StorageGBMonth*p.RetentionDays/(365.25/12))
	invocations := million / batch * p.LambdaRequest
	switch m {
	case OnDemand, Provisioned:
		c.Compute = million/batch*p.InvocationSeconds(s)*float64(s.MemoryMB)/1024*p.LambdaGBSecond + invocations
		if m == Provisioned {
			c.Units = max(p.MinPollers, int(math.Ceil(rate/p.PollerMsgsPerS)))
			c.Fleet = float64(c.Units) * p.PollerHour * million / rate / 3600
		}
	case ManagedInstances:
		vcpus := rate * s.CPUus / 1e6 / p.InstanceUtilisation
		c.Units = max(p.MinInstances, int(math.Ceil(vcpus/float64(p.InstanceVCPUs))))
		c.Compute = invocations
		c.Fleet = float64(c.Units) * p.InstanceHour * (1 + p.ManagementFee) * million / rate / 3600
	}
	return c
}

// InvocationSeconds is the billed duration of one invocation of 10 records
// on demand: the measured batch with the modelled latency, or, when longer,
// its CPU at the function's share of a vCPU (memory ÷ 1,769 MB). For a
// processor that runs its records one after the other the waits and the CPU
// add up instead, so this is a lower bound for it.
func (p Prices) InvocationSeconds(s System) float64 {
	share := math.Min(1, float64(s.MemoryMB)/p.VCPUMemoryMB)
	return math.Max(s.BatchMs/1e3, batch*s.CPUus/1e6/share)
}

// Systems are the table's columns, from a run's figures: pkg/idem in lease
// and transactional mode, and Powertools Python with its default
// (sequential) batch processor. memoryMB is the function's memory.
func Systems(f report.Figures, memoryMB int) []System {
	goLease := System{Name: "pkg/idem, lease", Requests: f.Ops(report.LeaseNew1, report.Go),
		ItemBytes: f.Get(report.LeaseNew1, report.Go, report.ItemBytes),
		CPUus:     f.Get(report.DelayBatchConc, report.Go, report.CPUus), BatchMs: f.Get(report.DelayBatchConc, report.Go, report.MsPerEvt),
		MemoryMB: memoryMB}
	goTx := System{Name: "pkg/idem, transactional", Requests: f.Ops(report.TxNew, report.Go),
		ItemBytes: f.Get(report.TxNew, report.Go, report.ItemBytes), EffectBytes: f.Get(report.TxNew, report.Go, report.LedgerBytes),
		CPUus: f.Get(report.DelayBatchTx, report.Go, report.CPUus), BatchMs: f.Get(report.DelayBatchTx, report.Go, report.MsPerEvt),
		MemoryMB: memoryMB}
	py := System{Name: "Powertools Python", Requests: f.Ops(report.LeaseNew1, report.Py),
		ItemBytes: f.Get(report.LeaseNew1, report.Py, report.ItemBytes),
		CPUus:     f.Get(report.DelayBatchSeq, report.Py, report.CPUus), BatchMs: f.Get(report.DelayBatchSeq, report.Py, report.MsPerEvt),
		MemoryMB: memoryMB}
	return []System{goLease, goTx, py}
}

// complete reports whether every input of s was measured.
func (s System) complete() bool {
	for _, v := range []float64{s.ItemBytes, s.CPUus, s.BatchMs} {
		if math.IsNaN(v) || v <= 0 {
			return false
		}
	}
	return len(s.Requests) > 0
}

// Render is the cost section: the inputs, the table, which mode is
// cheapest at each rate, and the prices assumed.
func (p Prices) Render(systems []System) string {
	var ok []System
	var missing []string
	for _, s := range systems {
		if s.complete() {
			ok = append(ok, s)
		} else {
			missing = append(missing, s.Name)
		}
	}
	var b strings.Builder
	if len(missing) > 0 {
		fmt.Fprintf(&b, "Left out, their inputs were not measured in this run: %s.\n\n", strings.Join(missing, ", "))
	}
	if len(ok) == 0 {
		return b.String()
	}
	b.WriteString("Inputs, measured:\n\n")
	b.WriteString(p.inputs(ok))
	fmt.Fprintf(&b, "\nUSD per million new messages, %s, prices of %s (below); DynamoDB + compute + pollers or instances:\n\n", p.Region, p.Date)
	b.WriteString(p.table(ok))
	b.WriteString("\n")
	b.WriteString(p.cheapest(ok))
	b.WriteString("\nHow: DynamoDB = write units × price + the receipt stored for its retention; on demand, a batch of 10 is one " +
		"invocation billed for max(the measured batch with the modelled latency, its CPU at the function's share of a vCPU); " +
		"pollers = max(2, rate ÷ 100 a second), billed by the hour, on top of the on-demand compute; Managed Instances = " +
		"the instances that keep the CPU at half their vCPUs (at least 3), price + 15%, and $0.20 per million invocations. " +
		"SQS's own requests are left out: the same for every column. The CPU per record was measured on the bench machine's " +
		"cores (named above), not Graviton's.\n\nPrices assumed:\n\n")
	for _, src := range p.Sources {
		fmt.Fprintf(&b, "- %s\n", src)
	}
	return b.String()
}

func (p Prices) inputs(systems []System) string {
	head := []string{""}
	for _, s := range systems {
		head = append(head, s.Name)
	}
	rows := [][]string{
		row("DynamoDB requests per new message", systems, func(s System) string { return ops(s.Requests) }),
		row("receipt item, bytes", systems, func(s System) string { return fmt.Sprintf("%.0f", s.ItemBytes) }),
		row("write units per message (idempotency's)", systems, func(s System) string { return fmt.Sprintf("%.0f", s.WRU()) }),
		row("CPU per record, µs (batch of 10, modelled latency)", systems, func(s System) string { return fmt.Sprintf("%.0f", s.CPUus) }),
		row("one event of 10 records, ms (modelled latency)", systems, func(s System) string { return fmt.Sprintf("%.1f", s.BatchMs) }),
		row("function memory, MB", systems, func(s System) string { return fmt.Sprint(s.MemoryMB) }),
		row("billed duration of an invocation on demand, ms", systems, func(s System) string {
			return fmt.Sprintf("%.1f", 1e3*p.InvocationSeconds(s))
		}),
	}
	return mdTable(head, rows)
}

func (p Prices) table(systems []System) string {
	head := []string{"", "rate, msg/s"}
	for _, s := range systems {
		head = append(head, s.Name)
	}
	head = append(head, "sizing")
	var rows [][]string
	for _, m := range Modes {
		for _, rate := range Rates {
			r := []string{m.String(), thousands(rate)}
			for _, s := range systems {
				r = append(r, fmt.Sprintf("%.2f", p.Of(s, m, rate).Total()))
			}
			rows = append(rows, append(r, p.sizing(m, systems, rate)))
		}
	}
	r := []string{"of which DynamoDB, every mode and rate", ""}
	for _, s := range systems {
		r = append(r, fmt.Sprintf("%.2f", p.Of(s, OnDemand, Rates[0]).DynamoDB))
	}
	return mdTable(head, append(rows, append(r, "")))
}

// sizing says how many pollers or instances each column needs.
func (p Prices) sizing(m Mode, systems []System, rate float64) string {
	switch m {
	case Provisioned:
		return fmt.Sprintf("%d pollers", p.Of(systems[0], m, rate).Units)
	case ManagedInstances:
		var parts []string
		for _, s := range systems {
			parts = append(parts, fmt.Sprint(p.Of(s, m, rate).Units))
		}
		return strings.Join(parts, " / ") + " × " + p.Instance + " (per column)"
	}
	return ""
}

// cheapest says, at each rate, the cheapest mode of each column and the
// cheapest of all.
func (p Prices) cheapest(systems []System) string {
	var b strings.Builder
	for _, rate := range Rates {
		best, bestName := math.Inf(1), ""
		var parts []string
		for _, s := range systems {
			sBest, sMode := math.Inf(1), OnDemand
			for _, m := range Modes {
				if t := p.Of(s, m, rate).Total(); t < sBest {
					sBest, sMode = t, m
				}
			}
			parts = append(parts, fmt.Sprintf("%s on %s, $%.2f", s.Name, sMode, sBest))
			if sBest < best {
				best, bestName = sBest, s.Name+" on "+sMode.String()
			}
		}
		fmt.Fprintf(&b, "- %s messages a second: cheapest %s ($%.2f per million). Each column's cheapest: %s.\n",
			thousands(rate), bestName, best, strings.Join(parts, "; "))
	}
	return b.String()
}

func row(label string, systems []System, f func(System) string) []string {
	r := []string{label}
	for _, s := range systems {
		r = append(r, f(s))
	}
	return r
}

func ops(m map[string]float64) string {
	var parts []string
	for _, op := range []string{"PutItem", "UpdateItem", "TransactWriteItems", "GetItem", "DeleteItem"} {
		if n := m[op]; n > 0 {
			parts = append(parts, fmt.Sprintf("%.2f %s", n, op))
		}
	}
	return strings.Join(parts, " + ")
}

func mdTable(head []string, rows [][]string) string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|---|")
	for range head[1:] {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return b.String()
}

func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}
