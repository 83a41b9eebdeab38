package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/exactlyonce/sqsidem/integration/bench/internal/driver"
	"github.com/exactlyonce/sqsidem/integration/bench/internal/report"
)

// A driver's result as the Python driver prints it for lease-dup: 1,000
// keys, seeded first (1,000 PutItem + 1,000 UpdateItem), warm-up of one key.
func dupResult() driver.Result {
	return driver.Result{
		System: report.Py, Scenario: driver.LeaseDup, Workers: 1, Messages: 1000, OK: true,
		Seconds: 2, CPUSeconds: 0.9, CPUSecondsPerMessage: 0.0009, MsgsPerSecond: 500, RSSKB: 51200,
		Requests:           map[string]int{"PutItem": 1000},
		RequestsPerMessage: 1,
		RequestsTotal:      map[string]int{"PutItem": 2002, "UpdateItem": 1001},
	}
}

func TestMetricsFromTheWire(t *testing.T) {
	m, err := metrics(dupResult(), map[string]int{"PutItem": 2002, "UpdateItem": 1001}, true)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]float64{
		report.WireRPM: 1, report.DriverRPM: 1, report.CPUus: 900, report.MsgsPerS: 500, report.MsPerMsg: 2, report.RSSMB: 50,
	} {
		if got := m[k]; got < want-1e-9 || got > want+1e-9 {
			t.Errorf("%s = %v, want %v", k, got, want)
		}
	}
	if _, ok := m[report.MsPerEvt]; ok {
		t.Error("ms per event for a lease case")
	}
}

func TestMetricsRefuseAWireThatDisagrees(t *testing.T) {
	_, err := metrics(dupResult(), map[string]int{"PutItem": 2003, "UpdateItem": 1001}, true)
	if err == nil || !strings.Contains(err.Error(), "the proxy saw") {
		t.Fatalf("err = %v", err)
	}
	bad := dupResult()
	bad.OK, bad.Failure = false, "2 effect calls on duplicates"
	if _, err := metrics(bad, bad.RequestsTotal, true); err == nil || !strings.Contains(err.Error(), "effect calls") {
		t.Fatalf("a failed check: err = %v", err)
	}
}

func TestOnly(t *testing.T) {
	jobs := only(plan(config{messages: 100, events: 5, delayMessages: 10, delayEvents: 2}), map[string]bool{report.Go: true})
	for _, j := range jobs {
		if len(j.systems) != 1 || j.systems[0] != report.Go {
			t.Errorf("%s: systems %v", j.c, j.systems)
		}
		if j.c == report.BatchNewSeq {
			t.Errorf("%s is Powertools only", j.c)
		}
	}
	if len(jobs) == 0 {
		t.Fatal("no jobs for Go")
	}
}

func TestLastLine(t *testing.T) {
	if got := string(lastLine([]byte("noise\n{\"ok\":true}\n\n"))); got != `{"ok":true}` {
		t.Errorf("lastLine = %q", got)
	}
}

func TestRotate(t *testing.T) {
	s := []string{"a", "b", "c"}
	for rep, want := range map[int]string{1: "b c a", 2: "c a b", 3: "a b c"} {
		if got := strings.Join(rotate(s, rep), " "); got != want {
			t.Errorf("rotate(%v, %d) = %q, want %q", s, rep, got, want)
		}
	}
	if strings.Join(s, " ") != "a b c" {
		t.Errorf("rotate changed its input: %v", s)
	}
}

// Every case pkg/idem is measured against the floor on runs the floor
// too, in the same store, and the cost model's inputs are measured.
func TestPlanFloorAndCost(t *testing.T) {
	jobs := map[string]job{}
	for _, j := range plan(config{messages: 100, events: 5, delayMessages: 10, delayEvents: 2}) {
		jobs[j.c] = j
	}
	for _, c := range []string{report.LeaseNew1, report.LeaseNew16, report.TxNew, report.TxNew16,
		report.DelayOne, report.DelayBatchConc, report.DelayTxOne, report.DelayBatchTx} {
		j, ok := jobs[c]
		if !ok || !slices.Contains(j.systems, report.Go) || !slices.Contains(j.systems, report.Floor) {
			t.Errorf("%s: systems %v, want pkg/idem and the floor", c, j.systems)
		}
	}
	for c, want := range map[string]latency{report.DelayOne: model, report.DelayBatchTx: model, report.DelayBatchLocal: local, report.LeaseNew1: none} {
		if jobs[c].delay != want {
			t.Errorf("%s: latency %v, want %v", c, jobs[c].delay, want)
		}
	}
	for _, c := range []string{report.LeaseNew1, report.TxNew} {
		if !jobs[c].sizes {
			t.Errorf("%s: item sizes not measured (the cost model's input)", c)
		}
	}
}
