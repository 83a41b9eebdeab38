package idem

import (
	"slices"
	"sync"
	"time"
)

// owedResultBudget bounds the bytes of results a Guard keeps with the
// receipts it owes. A receipt owed past it keeps no result: written late,
// it is a receipt without a result (ResultOmitted), as a result over the
// cap is. The receipts themselves are never dropped for room: each is a
// few hundred bytes, and forgetting one could run its effect again.
const owedResultBudget = 8 << 20

// owedReceipts are the receipts a Guard owes: effects it ran whose receipt
// could not be written (Unconfirmed). Every one is kept until it is
// written, fenced out, or expires (receipt.expires): there is no count
// bound, and no eviction.
type owedReceipts struct {
	mu          sync.Mutex
	items       map[string]receipt
	resultBytes int // of the results items hold, at most owedResultBudget
	sweepAt     int // len(items) at which expired entries are swept
}

// owedSweepMin is the fewest entries at which expired ones are swept: an
// entry is dropped when its key is asked for after it expired, or by a
// sweep once the map has doubled since the last one.
const owedSweepMin = 64

func newOwedReceipts() *owedReceipts {
	return &owedReceipts{items: map[string]receipt{}, sweepAt: owedSweepMin}
}

func (o *owedReceipts) get(key string, now time.Time) (receipt, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	r, ok := o.items[key]
	if ok && !now.Before(r.expires()) {
		o.drop(key, r)
		return receipt{}, false
	}
	return r, ok
}

// put keeps r, with a result of its own that no caller can change, or
// without its result when the budget is spent. A receipt of a later
// attempt stays: with several invocations in one process, an attempt the
// record was taken from may report its failed write after the attempt
// that took it over, and only the latter's can still land.
func (o *owedReceipts) put(key string, r receipt, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if old, ok := o.items[key]; ok {
		if old.token != r.token && old.attempts > r.attempts && now.Before(old.expires()) {
			return
		}
		o.drop(key, old)
	}
	if o.resultBytes+len(r.completion.Result) > owedResultBudget {
		r.completion.Result, r.completion.ResultOmitted = nil, true
	}
	r.completion.Result = slices.Clone(r.completion.Result)
	o.items[key] = r
	o.resultBytes += len(r.completion.Result)
	if len(o.items) >= o.sweepAt {
		for k, e := range o.items {
			if !now.Before(e.expires()) {
				o.drop(k, e)
			}
		}
		o.sweepAt = max(2*len(o.items), owedSweepMin)
	}
}

// remove forgets the receipt of key's attempt token, once written or
// fenced out; another attempt's, put meanwhile, stays.
func (o *owedReceipts) remove(key, token string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if r, ok := o.items[key]; ok && r.token == token {
		o.drop(key, r)
	}
}

// drop removes key, whose entry is r; o.mu is held.
func (o *owedReceipts) drop(key string, r receipt) {
	delete(o.items, key)
	o.resultBytes -= len(r.completion.Result)
}
