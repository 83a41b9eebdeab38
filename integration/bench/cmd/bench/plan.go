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
	delay    bool     // with the proxy's modelled latency
	env      []string // added to the driver's environment
}

var (
	allSystems = []string{report.Py, report.TS, report.Go}
	powertools = []string{report.Py, report.TS}
	goOnly     = []string{report.Go}
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
		{report.LeaseNew1, driver.LeaseNew, lease("1", n), allSystems, false, nil},
		{report.LeaseDup1, driver.LeaseDup, lease("1", n), allSystems, false, nil},
		{report.LeaseNew16, driver.LeaseNew, lease("16", n), allSystems, false, nil},
		{report.LeaseDup16, driver.LeaseDup, lease("16", n), allSystems, false, nil},
		// What the Go runtime's scheduling costs: the same with one P, so
		// that no request hands a goroutine over to another thread.
		{report.LeaseNew1P1, driver.LeaseNew, lease("1", n), goOnly, false, []string{"GOMAXPROCS=1"}},
		{report.LeaseDup1P1, driver.LeaseDup, lease("1", n), goOnly, false, []string{"GOMAXPROCS=1"}},
		{report.CacheDup, driver.CacheDup, lease("1", small), goOnly, false, nil},
		{report.TxNew, driver.TxNew, lease("1", small), goOnly, false, nil},
		{report.TxDup, driver.TxDup, lease("1", small), goOnly, false, nil},
		{report.BatchNewConc, driver.BatchNew, batch("concurrent", ev), allSystems, false, nil},
		{report.BatchDupConc, driver.BatchDup, batch("concurrent", ev), allSystems, false, nil},
		{report.BatchNewSeq, driver.BatchNew, batch("sequential", ev), powertools, false, nil},
		{report.BatchDupSeq, driver.BatchDup, batch("sequential", ev), powertools, false, nil},
		{report.DelayOne, driver.LeaseNew, lease("1", dn), allSystems, true, nil},
		{report.DelayBatchConc, driver.BatchNew, batch("concurrent", dev), allSystems, true, nil},
		{report.DelayBatchSeq, driver.BatchNew, batch("sequential", dev), powertools, true, nil},
	}
}

// redisPlan is the Redis store's cases, when there is a redis-server.
func redisPlan(cfg config) []job {
	n := strconv.Itoa(cfg.messages)
	r := []string{report.Redis}
	return []job{
		{report.LeaseNew1, driver.LeaseNew, []string{"-n", n, "-w", "1"}, r, false, nil},
		{report.LeaseDup1, driver.LeaseDup, []string{"-n", n, "-w", "1"}, r, false, nil},
		{report.LeaseNew16, driver.LeaseNew, []string{"-n", n, "-w", "16"}, r, false, nil},
		{report.LeaseDup16, driver.LeaseDup, []string{"-n", n, "-w", "16"}, r, false, nil},
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
