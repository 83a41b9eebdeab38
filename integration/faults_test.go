//go:build integration

package integration

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/sqsidem/integration/internal/emu"
	"github.com/exactlyonce/sqsidem/integration/internal/faultproxy"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// The fault tier: the library against DynamoDB Local behind a proxy that
// fails, throttles and loses acknowledgements, under concurrency. These are
// correctness tests: they count effects, not milliseconds.

// TestFaultTier runs the fault tier's tests one after the other (each is
// concurrent inside), before the scenarios start (it is not parallel): with
// them, or two at once, they would saturate the machine and test it rather
// than the library, and starve the scenarios' 2 s functions.
func TestFaultTier(t *testing.T) {
	emulatorsOnly(t)
	for _, tc := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"LeaseMode", faultsLeaseMode},
		{"TransactionalMode", faultsTransactionalMode},
		{"ConcurrentCopies", faultsConcurrentCopies},
		{"SQSBatch", faultsSQSBatch},
		{"AcquireAckLost", faultAcquireAckLost},
		{"CompleteThrottledPastLease", faultCompleteThrottledPastLease},
		{"RetryQuotaExhausted", faultRetryQuotaExhausted},
		{"StoreDown", faultStoreDown},
	} {
		t.Run(tc.name, tc.fn)
	}
}

// faultMix is the mix the library was tried with: 10% of requests answered
// with a 500, ThrottlingException or ProvisionedThroughputExceededException
// without reaching DynamoDB, and 5% applied by DynamoDB but answered with a
// 500, so the client sends again a write that already happened.
func faultMix(seed uint64) faultproxy.Mix {
	return faultproxy.Mix{Fail: 0.04, Throttle: 0.03, ThroughputExceeded: 0.03, LoseAck: 0.05, Seed: seed}
}

// Lambda-like settings of the stack: a 30 s invocation, the lease its
// remaining time, a 3 s safety margin.
const (
	faultInvocation = 30 * time.Second
	faultMargin     = 3 * time.Second
)

// faultEnv is one receipt table and ledger behind a fault proxy.
type faultEnv struct {
	proxy    *faultproxy.Proxy
	direct   *dynamodb.Client // straight to DynamoDB Local, for checks
	store    *dynamostore.Store
	receipts string
	ledger   string
}

func newFaultEnv(t *testing.T) *faultEnv {
	t.Helper()
	ctx := context.Background()
	url := dynamoEndpoint(t)
	direct, _, err := emu.Clients(ctx, url, url)
	if err != nil {
		t.Fatal(err)
	}
	p, err := faultproxy.Start(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	proxied, _, err := emu.Clients(ctx, p.URL(), p.URL())
	if err != nil {
		t.Fatal(err)
	}
	e := &faultEnv{proxy: p, direct: direct, receipts: createReceiptTable(ctx, t, direct), ledger: createLedgerTable(ctx, t, direct)}
	if e.store, err = dynamostore.New(proxied, e.receipts); err != nil {
		t.Fatal(err)
	}
	return e
}

// tally counts what deliveries reported.
type tally struct {
	mu       sync.Mutex
	outcomes map[idem.Outcome]int
	errs     []error // unexpected ones, the first few
}

func (t *tally) add(res idem.Result, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.outcomes == nil {
		t.outcomes = map[idem.Outcome]int{}
	}
	t.outcomes[res.Outcome]++
	if err != nil && res.Outcome != idem.StoreError && len(t.errs) < 5 {
		t.errs = append(t.errs, err)
	}
}

func (t *tally) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return fmt.Sprint(t.outcomes)
}

// deliver runs every key's deliveries one after the other, keys spread over
// workers goroutines. A delivery that meets a store error is delivered
// again, as SQS would; every other outcome counts as it is. Since no two
// deliveries of a key overlap, any InProgress is a false one (a client's
// own lease reported as someone else's) and any LeaseLost too.
func deliver(keys []string, deliveries, workers int, do func(ctx context.Context, key string) (idem.Result, error)) *tally {
	var t tally
	work := make(chan string)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for key := range work {
				for range deliveries {
					for try := 0; ; try++ {
						ctx, cancel := context.WithTimeout(context.Background(), faultInvocation)
						res, err := do(ctx, key)
						cancel()
						t.add(res, err)
						if res.Outcome != idem.StoreError || try == 5 {
							break
						}
					}
				}
			}
		})
	}
	for _, k := range keys {
		work <- k
	}
	close(work)
	wg.Wait()
	return &t
}

func faultKeys(prefix string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s-%05d", prefix, i)
	}
	return keys
}

// faultsLeaseMode: 2,000 keys x 5 deliveries (10,000) from 48
// goroutines under the fault mix, with the stack's defaults: every key's
// effect runs exactly once, and no delivery is told a false "in progress",
// a false "lease lost", or "unconfirmed".
func faultsLeaseMode(t *testing.T) {
	e := newFaultEnv(t)
	g, err := idem.New(e.store, "fault-lease", idem.WithSafetyMargin(faultMargin))
	if err != nil {
		t.Fatal(err)
	}
	e.proxy.SetDecider(faultMix(1).Decider())
	keys := faultKeys("fault-lease", 2000)
	effects := make(map[string]*atomic.Int32, len(keys))
	for _, k := range keys {
		effects[k] = new(atomic.Int32)
	}
	start := time.Now()
	res := deliver(keys, 5, 48, func(ctx context.Context, key string) (idem.Result, error) {
		return g.Do(ctx, key, []byte(key), func(context.Context) ([]byte, error) {
			effects[key].Add(1)
			return []byte("card-" + key), nil
		})
	})
	elapsed := time.Since(start)
	double, missing := 0, 0
	for _, k := range keys {
		switch n := effects[k].Load(); {
		case n == 0:
			missing++
		case n > 1:
			double += int(n) - 1
		}
	}
	reportFaults(t, "lease mode", e.proxy, len(keys), res, elapsed)
	if double != 0 || missing != 0 {
		t.Fatalf("double effects %d, keys never applied %d; want 0 and 0", double, missing)
	}
	o := res.outcomes
	if o[idem.InProgress] != 0 || o[idem.LeaseLost] != 0 || o[idem.Unconfirmed] != 0 || o[idem.Failed] != 0 {
		t.Fatalf("outcomes %v: want no false in progress, lease lost, unconfirmed or failed (errors: %v)", o, res.errs)
	}
	if o[idem.Executed] != len(keys) || o[idem.Duplicate] != 4*len(keys) {
		t.Fatalf("outcomes %v: want %d executed and %d duplicates", o, len(keys), 4*len(keys))
	}
}

// faultsTransactionalMode: 2,000 keys x 3 deliveries under the fault
// mix, the effect a ledger increment committed with the receipt: the ledger
// holds exactly 1 per key.
func faultsTransactionalMode(t *testing.T) {
	e := newFaultEnv(t)
	g, err := idem.New(e.store, "fault-tx")
	if err != nil {
		t.Fatal(err)
	}
	e.proxy.SetDecider(faultMix(2).Decider())
	keys := faultKeys("fault-tx", 2000)
	inc := ledgerIncrement(e.ledger)
	start := time.Now()
	res := deliver(keys, 3, 48, func(ctx context.Context, key string) (idem.Result, error) {
		return g.DoTx(ctx, key, []byte(key), func(context.Context) (idem.TxEffect, error) {
			return idem.TxEffect{Writes: []any{inc(key)}, Result: []byte("card-" + key)}, nil
		})
	})
	elapsed := time.Since(start)
	reportFaults(t, "transactional mode", e.proxy, len(keys), res, elapsed)
	count := ledgerCount(e.direct, e.ledger)
	double, missing := 0, 0
	for _, k := range keys {
		n, err := count(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case n == 0:
			missing++
		case n > 1:
			double += n - 1
		}
	}
	if double != 0 || missing != 0 {
		t.Fatalf("ledger: double effects %d, keys never applied %d; want 0 and 0", double, missing)
	}
	if o := res.outcomes; o[idem.InProgress] != 0 || o[idem.Executed] != len(keys) || o[idem.Duplicate] != 2*len(keys) {
		t.Fatalf("outcomes %v (errors %v): want %d executed, %d duplicates, no false in progress", o, res.errs, len(keys), 2*len(keys))
	}
}

// faultsConcurrentCopies: 300 keys, each delivered by 4 goroutines at
// the same moment, in both modes, under the fault mix. In progress is
// legitimate here; a copy told so is delivered again until the key is done.
func faultsConcurrentCopies(t *testing.T) {
	e := newFaultEnv(t)
	e.proxy.SetDecider(faultMix(3).Decider())
	g, err := idem.New(e.store, "copies", idem.WithSafetyMargin(faultMargin))
	if err != nil {
		t.Fatal(err)
	}
	inc := ledgerIncrement(e.ledger)
	for _, mode := range consumer.Modes() {
		keys := faultKeys("copies-"+mode, 300)
		var effects sync.Map // key → *atomic.Int32
		var outcomes tally
		var wg sync.WaitGroup
		sem := make(chan struct{}, 48)
		for _, key := range keys {
			n := new(atomic.Int32)
			effects.Store(key, n)
			for range 4 {
				wg.Go(func() {
					sem <- struct{}{}
					defer func() { <-sem }()
					for try := 0; try < 50; try++ {
						ctx, cancel := context.WithTimeout(context.Background(), faultInvocation)
						var res idem.Result
						var err error
						if mode == consumer.ModeLease {
							res, err = g.Do(ctx, key, []byte(key), func(context.Context) ([]byte, error) { n.Add(1); return nil, nil })
						} else {
							res, err = g.DoTx(ctx, key, []byte(key), func(context.Context) (idem.TxEffect, error) {
								return idem.TxEffect{Writes: []any{inc(key)}}, nil
							})
						}
						cancel()
						outcomes.add(res, err)
						if res.Outcome == idem.Executed || res.Outcome == idem.Duplicate {
							return
						}
						time.Sleep(20 * time.Millisecond) // as a message comes back later
					}
					t.Errorf("%s: key %s never done", mode, key)
				})
			}
		}
		wg.Wait()
		double := 0
		for _, key := range keys {
			v, _ := effects.Load(key)
			got := int(v.(*atomic.Int32).Load())
			if mode == consumer.ModeTransactional {
				if got, err = ledgerCount(e.direct, e.ledger)(context.Background(), key); err != nil {
					t.Fatal(err)
				}
			}
			if got != 1 {
				double++
				t.Errorf("%s: key %s applied %d times", mode, key, got)
			}
		}
		t.Logf("%s mode, 300 keys x 4 concurrent copies: outcomes %s; keys not applied exactly once: %d", mode, &outcomes, double)
		if outcomes.outcomes[idem.LeaseLost] != 0 || outcomes.outcomes[idem.Unconfirmed] != 0 {
			t.Fatalf("%s: outcomes %s: want no lease lost, no unconfirmed", mode, &outcomes)
		}
	}
}

func reportFaults(t *testing.T, what string, p *faultproxy.Proxy, keys int, res *tally, elapsed time.Duration) {
	t.Helper()
	deliveries := 0
	for _, n := range res.outcomes {
		deliveries += n
	}
	t.Logf("%s: %d deliveries of %d keys in %.1fs; outcomes %s; requests %v (%.2f per key, %.2f per delivery); faults injected %v",
		what, deliveries, keys, elapsed.Seconds(), res, p.Counts(), float64(p.Total())/float64(keys), float64(p.Total())/float64(deliveries), p.Faults())
}

// faultsSQSBatch: 1,000 keys sent as 1,500 messages (every other key
// twice) in batches of 10 through sqsbatch in lease mode, under the fault
// mix; failed records come back in later batches as SQS would redeliver
// them. Every key's effect runs exactly once.
func faultsSQSBatch(t *testing.T) {
	e := newFaultEnv(t)
	e.proxy.SetDecider(faultMix(4).Decider())
	g, err := idem.New(e.store, "batch", idem.WithSafetyMargin(faultMargin))
	if err != nil {
		t.Fatal(err)
	}
	keys := faultKeys("batch", 1000)
	effects := make(map[string]*atomic.Int32, len(keys))
	var queue []events.SQSMessage
	for i, k := range keys {
		effects[k] = new(atomic.Int32)
		copies := 1 + i%2
		for c := range copies {
			queue = append(queue, events.SQSMessage{MessageId: fmt.Sprintf("%s-%d", k, c), Body: `{"orderId":"` + k + `"}`})
		}
	}
	h, err := sqsbatch.New(g, sqsbatch.JSONField("orderId"), func(_ context.Context, key string, _ events.SQSMessage) ([]byte, error) {
		effects[key].Add(1)
		return nil, nil
	}, sqsbatch.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	batches, redelivered, batchErrors := 0, 0, 0
	next := func() []events.SQSMessage {
		mu.Lock()
		defer mu.Unlock()
		n := min(10, len(queue))
		b := queue[:n:n]
		queue = queue[n:]
		batches++
		return b
	}
	requeue := func(ms []events.SQSMessage, whole bool) {
		mu.Lock()
		defer mu.Unlock()
		queue = append(queue, ms...)
		redelivered += len(ms)
		if whole {
			batchErrors++
		}
	}
	var wg sync.WaitGroup
	for range 8 { // 8 concurrent invocations
		wg.Go(func() {
			for idle := 0; idle < 20; {
				b := next()
				if len(b) == 0 {
					idle++
					time.Sleep(50 * time.Millisecond)
					continue
				}
				idle = 0
				ctx, cancel := context.WithTimeout(context.Background(), faultInvocation)
				resp, err := h.Handle(ctx, events.SQSEvent{Records: b})
				cancel()
				if err != nil {
					requeue(b, true)
					continue
				}
				failed := map[string]bool{}
				for _, f := range resp.BatchItemFailures {
					failed[f.ItemIdentifier] = true
				}
				var again []events.SQSMessage
				for _, m := range b {
					if failed[m.MessageId] {
						again = append(again, m)
					}
				}
				requeue(again, false)
			}
		})
	}
	wg.Wait()
	for _, k := range keys {
		if n := effects[k].Load(); n != 1 {
			t.Errorf("key %s applied %d times", k, n)
		}
	}
	t.Logf("sqsbatch: 1,500 messages of 1,000 keys in %d batches; %d records redelivered (%d whole batches); requests %v; faults %v",
		batches, redelivered, batchErrors, e.proxy.Counts(), e.proxy.Faults())
}
