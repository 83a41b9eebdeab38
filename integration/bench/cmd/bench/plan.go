package main

import (
	"strconv"

	"github.com/exactlyonce/sqsidem/integration/bench/internal/driver"
	"github.com/exactlyonce/sqsidem/integration/bench/internal/report"
)

// job is one case: a driver scenario with its flags, run by each of its
// systems in turn (Python, TypeScript, Go), once per repeat.
type job struct {
	c        string
	scenario string
	args     []string
	systems  []string
	delay    latency  // where the modelled latency is, if anywhere
	env      []string // added to the driver's environment
	// sizes: measure the items the run left in its table (the cost
	// model's item sizes).
	sizes bool
}

// latency is where a case's store is and how it is slowed down.
type latency int

const (
	// none: DynamoDB Local through the counting proxy, as fast as it goes.
	none latency = iota
	// model: the in-memory store (modelddb), every request held for the
	// modelled latency, concurrent requests concurrently.
	model
	// local: DynamoDB Local, the proxy holding every request for the
	// modelled latency first (what the bench did before modelddb).
	local
)

var (
	allSystems = []string{report.Py, report.TS, report.Go}
	powertools = []string{report.Py, report.TS}
	goOnly     = []string{report.Go}
	// withFloor: every system, and the bare SDK loop replaying pkg/idem's
	// requests; goFloor: pkg/idem and its floor.
	withFloor = []string{report.Py, report.TS, report.Go, report.Floor}
	goFloor   = []string{report.Go, report.Floor}
)

// plan is every case of a repeat, in the order they run.
func plan(cfg config) []job {
	n, ev := strconv.Itoa(cfg.messages), strconv.Itoa(cfg.events)
	// The transactional and cache cases only exist for pkg/idem; they are
	// about requests per message, which do not depend on N, so they run on
	// fewer keys to keep the run short.
	small := strconv.Itoa(max(cfg.messages/4, 1))
	dn, dev := strconv.Itoa(cfg.delayMessages), strconv.Itoa(cfg.delayEvents)
	lease := func(w string, count string) []string { return []string{"-n", count, "-w", w} }
	batch := func(p, r string) []string { return []string{"-r", r, "--processor", p} }
	return []job{
		{c: report.LeaseNew1, scenario: driver.LeaseNew, args: lease("1", n), systems: withFloor, sizes: true},
		{c: report.LeaseDup1, scenario: driver.LeaseDup, args: lease("1", n), systems: allSystems},
		{c: report.LeaseNew16, scenario: driver.LeaseNew, args: lease("16", n), systems: withFloor},
		{c: report.LeaseDup16, scenario: driver.LeaseDup, args: lease("16", n), systems: allSystems},
		// What the Go runtime's scheduling costs: the same with one P, so
		// that no request hands a goroutine over to another thread.
		{c: report.LeaseNew1P1, scenario: driver.LeaseNew, args: lease("1", n), systems: goOnly, env: []string{"GOMAXPROCS=1"}},
		{c: report.LeaseDup1P1, scenario: driver.LeaseDup, args: lease("1", n), systems: goOnly, env: []string{"GOMAXPROCS=1"}},
		{c: report.CacheDup, scenario: driver.CacheDup, args: lease("1", small), systems: goOnly},
		{c: report.TxNew, scenario: driver.TxNew, args: lease("1", small), systems: goFloor, sizes: true},
		{c: report.TxNew16, scenario: driver.TxNew, args: lease("16", small), systems: goFloor},
		{c: report.TxDup, scenario: driver.TxDup, args: lease("1", small), systems: goOnly},
		{c: report.BatchNewConc, scenario: driver.BatchNew, args: batch("concurrent", ev), systems: allSystems},
		{c: report.BatchDupConc, scenario: driver.BatchDup, args: batch("concurrent", ev), systems: allSystems},
		{c: report.BatchNewSeq, scenario: driver.BatchNew, args: batch("sequential", ev), systems: powertools},
		{c: report.BatchDupSeq, scenario: driver.BatchDup, args: batch("sequential", ev), systems: powertools},
		// The batch against one record, every request taking the modelled
		// latency on a store that answers concurrent requests at once.
		{c: report.DelayOne, scenario: driver.LeaseNew, args: lease("1", dn), systems: withFloor, delay: model},
		{c: report.DelayBatchConc, scenario: driver.BatchNew, args: batch("concurrent", dev), systems: withFloor, delay: model},
		{c: report.DelayBatchSeq, scenario: driver.BatchNew, args: batch("sequential", dev), systems: powertools, delay: model},
		{c: report.DelayTxOne, scenario: driver.TxNew, args: lease("1", dn), systems: goFloor, delay: model},
		{c: report.DelayBatchTx, scenario: driver.BatchTxNew, args: batch("concurrent", dev), systems: goFloor, delay: model},
		// The same on DynamoDB Local, whose one SQLite thread queues the
		// batch's requests: the figure the bench reported before.
		{c: report.DelayOneLocal, scenario: driver.LeaseNew, args: lease("1", dn), systems: goOnly, delay: local},
		{c: report.DelayBatchLocal, scenario: driver.BatchNew, args: batch("concurrent", dev), systems: goOnly, delay: local},
	}
}

// redisPlan is the Redis store's cases, when there is a redis-server.
func redisPlan(cfg config) []job {
	n := strconv.Itoa(cfg.messages)
	r := []string{report.Redis}
	return []job{
		{c: report.LeaseNew1, scenario: driver.LeaseNew, args: []string{"-n", n, "-w", "1"}, systems: r},
		{c: report.LeaseDup1, scenario: driver.LeaseDup, args: []string{"-n", n, "-w", "1"}, systems: r},
		{c: report.LeaseNew16, scenario: driver.LeaseNew, args: []string{"-n", n, "-w", "16"}, systems: r},
		{c: report.LeaseDup16, scenario: driver.LeaseDup, args: []string{"-n", n, "-w", "16"}, systems: r},
	}
}

// only keeps the systems asked for (-systems).
func only(jobs []job, systems map[string]bool) []job {
	var out []job
	for _, j := range jobs {
		var keep []string
		for _, s := range j.systems {
			if systems[s] {
				keep = append(keep, s)
			}
		}
		if len(keep) > 0 {
			j.systems = keep
			out = append(out, j)
		}
	}
	return out
}
