package cost

import (
	"math"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/integration/bench/internal/report"
)

func TestItemSize(t *testing.T) {
	for _, tc := range []struct {
		name string
		item map[string]types.AttributeValue
		want int
	}{
		{"string", map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "bench#abc"}}, 2 + 9},
		// Numbers: DynamoDB Local's sizes, as ddbmodel measured them.
		{"numbers", map[string]types.AttributeValue{
			"a": &types.AttributeValueMemberN{Value: "1"},     // 2
			"b": &types.AttributeValueMemberN{Value: "12345"}, // 4
			"c": &types.AttributeValueMemberN{Value: "1.5"},   // 3
			"d": &types.AttributeValueMemberN{Value: "0.001"}, // 2
			"e": &types.AttributeValueMemberN{Value: "-5"},    // 3
		}, 5 + 2 + 4 + 3 + 2 + 3},
		{"binary and bool", map[string]types.AttributeValue{
			"fp": &types.AttributeValueMemberB{Value: make([]byte, 32)},
			"ok": &types.AttributeValueMemberBOOL{Value: true},
		}, 2 + 32 + 2 + 1},
		{"map", map[string]types.AttributeValue{"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"k": &types.AttributeValueMemberS{Value: "vv"},
		}}}, 1 + 3 + 1 + 1 + 2},
	} {
		if got := ItemSize(tc.item); got != tc.want {
			t.Errorf("%s: ItemSize = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestWriteUnits(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    System
		want float64
	}{
		{"lease: acquire and complete of a small receipt", System{Requests: map[string]float64{"UpdateItem": 2}, ItemBytes: 300}, 2},
		{"a receipt past 1 KB costs 2 per write", System{Requests: map[string]float64{"UpdateItem": 2}, ItemBytes: 1500}, 4},
		// The receipt at 2 units, the ledger at 2 of which 1 is the
		// effect's own (it would cost 1 outside a transaction).
		{"transactional", System{Requests: map[string]float64{"TransactWriteItems": 1}, ItemBytes: 300, EffectBytes: 60}, 3},
		{"powertools: put and update", System{Requests: map[string]float64{"PutItem": 1, "UpdateItem": 1}, ItemBytes: 250}, 2},
	} {
		if got := tc.s.WRU(); got != tc.want {
			t.Errorf("%s: WRU = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestOf(t *testing.T) {
	p := DefaultPrices
	s := System{Requests: map[string]float64{"UpdateItem": 2}, ItemBytes: 300, CPUus: 500, BatchMs: 15, MemoryMB: 256}
	// 2 WRU, and 400 bytes kept 7 days.
	wantDDB := 1e6 * (2*0.625/1e6 + 400.0/(1<<30)*0.25*7/(365.25/12))
	// A batch's CPU, 5 ms, at 256/1769 of a vCPU takes 34.5 ms: longer
	// than the 15 ms the batch took.
	dur := 10 * 500e-6 / (256.0 / 1769)
	wantCompute := 1e5*dur*0.25*0.0000133334 + 1e5*0.20/1e6
	c := p.Of(s, OnDemand, 1000)
	if !near(c.DynamoDB, wantDDB) || !near(c.Compute, wantCompute) || c.Fleet != 0 || c.Units != 0 {
		t.Errorf("on demand: %+v, want DynamoDB %v compute %v", c, wantDDB, wantCompute)
	}
	for rate, want := range map[float64]int{100: 2, 1000: 10, 10000: 100} {
		c := p.Of(s, Provisioned, rate)
		if c.Units != want || !near(c.Fleet, float64(want)*0.00925*1e6/rate/3600) || !near(c.Compute, wantCompute) {
			t.Errorf("provisioned at %v/s: %+v, want %d pollers", rate, c, want)
		}
	}
	// 10,000 a second × 500 µs = 5 vCPUs busy, 10 at half load: 5
	// instances of 2 vCPUs; at 100 a second the floor of 3.
	for rate, want := range map[float64]int{100: 3, 10000: 5} {
		c := p.Of(s, ManagedInstances, rate)
		if c.Units != want || !near(c.Fleet, float64(want)*0.0816*1.15*1e6/rate/3600) || !near(c.Compute, 1e5*0.20/1e6) {
			t.Errorf("managed instances at %v/s: %+v, want %d instances", rate, c, want)
		}
	}
	// A fast batch on a big function is billed its wall time.
	big := s
	big.MemoryMB = 1769
	if got := p.InvocationSeconds(big); !near(got, 0.015) {
		t.Errorf("InvocationSeconds at one vCPU = %v, want the batch's 15 ms", got)
	}
}

func TestSystemsAndRender(t *testing.T) {
	var samples []report.Sample
	add := func(sys, c string, m map[string]float64) {
		samples = append(samples, report.Sample{System: sys, Case: c, Repeat: 1, Metrics: m})
	}
	add(report.Go, report.LeaseNew1, map[string]float64{report.OpRPM("UpdateItem"): 2, report.ItemBytes: 310})
	add(report.Go, report.TxNew, map[string]float64{report.OpRPM("TransactWriteItems"): 1, report.ItemBytes: 330, report.LedgerBytes: 40})
	add(report.Go, report.DelayBatchConc, map[string]float64{report.CPUus: 480, report.MsPerEvt: 14})
	add(report.Go, report.DelayBatchTx, map[string]float64{report.CPUus: 300, report.MsPerEvt: 8})
	add(report.Py, report.LeaseNew1, map[string]float64{report.OpRPM("PutItem"): 1, report.OpRPM("UpdateItem"): 1, report.ItemBytes: 280})
	add(report.Py, report.DelayBatchSeq, map[string]float64{report.CPUus: 1600, report.MsPerEvt: 160})
	systems := Systems(report.Collect(samples), DefaultMemoryMB)
	if len(systems) != 3 || systems[1].WRU() != 3 || systems[2].CPUus != 1600 || systems[0].Requests["UpdateItem"] != 2 {
		t.Fatalf("systems %+v", systems)
	}
	md := DefaultPrices.Render(systems)
	for _, want := range []string{
		"| write units per message (idempotency's) | 2 | 3 | 2 |",
		"| Lambda on demand, provisioned pollers | 100 |",
		"2 pollers",
		"× m7g.large",
		"- 100 messages a second: cheapest pkg/idem, lease on Lambda on demand",
		"$0.0816 an hour",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("render lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(md)
	}
	// A run without Python's figures leaves Python out, and says so.
	md = DefaultPrices.Render(Systems(report.Collect(samples[:4]), DefaultMemoryMB))
	if !strings.Contains(md, "Left out, their inputs were not measured in this run: Powertools Python.") {
		t.Errorf("render of a run without Python:\n%s", md)
	}
}
