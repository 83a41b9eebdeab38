//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/exactlyonce/sqsidem/integration/internal/emu"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
)

// The in-process benchmarks of the Guard on DynamoDB Local: requests per
// message (req/op, counted in the SDK) and ns/op, a quick check that needs
// no Python or Node (`make bench-quick`). The comparison with Powertools,
// with requests counted on the wire and CPU per message, is `make bench`
// (integration/bench/cmd/bench).

// benchEnv is what every benchmark shares: one DynamoDB Local, a client
// counting the requests it sends, a receipt table and a ledger table.
type benchEnv struct {
	store    *dynamostore.Store
	client   *dynamodb.Client
	ledger   string
	receipts string
	counter  *requestCounter
}

var (
	benchOnce    sync.Once
	benchShared  *benchEnv
	benchErr     error
	benchKeySeq  atomic.Int64
	benchTimeout = 2 * time.Minute
)

func setupBench(b *testing.B) *benchEnv {
	b.Helper()
	benchOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), benchTimeout)
		defer cancel()
		url := dynamoEndpoint(b)
		// The SQS client is not used; giving it an endpoint too keeps
		// Clients on its emulator path (dummy credentials, fixed region).
		plain, _, err := emu.Clients(ctx, url, url)
		if err != nil {
			benchErr = err
			return
		}
		counter := &requestCounter{}
		client := dynamodb.New(plain.Options(), func(o *dynamodb.Options) {
			o.APIOptions = append(o.APIOptions, counter.register)
		})
		env := &benchEnv{client: client, counter: counter}
		tb := &setupTB{TB: b}
		table := createReceiptTable(ctx, tb, plain)
		env.ledger = createLedgerTable(ctx, tb, plain)
		if tb.err != nil {
			benchErr = tb.err
			return
		}
		env.receipts = table
		if env.store, benchErr = dynamostore.New(client, table); benchErr != nil {
			return
		}
		benchShared = env
	})
	if benchErr != nil {
		b.Fatalf("benchmark setup: %v", benchErr)
	}
	return benchShared
}

// setupTB turns the table helpers' Fatalf into an error, so that a failed
// setup inside sync.Once is reported by every benchmark, not only the first.
type setupTB struct {
	testing.TB
	err error
}

func (t *setupTB) Fatalf(format string, args ...any) {
	if t.err == nil {
		t.err = fmt.Errorf(format, args...)
	}
}

// requestCounter counts the HTTP requests the SDK sends, per operation. It
// sits in the Finalize step after the retry middleware, so SDK retries count
// as the requests they are.
type requestCounter struct {
	mu    sync.Mutex
	byOp  map[string]int64
	total atomic.Int64
}

func (c *requestCounter) register(stack *middleware.Stack) error {
	return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("CountRequests",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			c.total.Add(1)
			op := awsmiddleware.GetOperationName(ctx)
			c.mu.Lock()
			if c.byOp == nil {
				c.byOp = make(map[string]int64)
			}
			c.byOp[op]++
			c.mu.Unlock()
			return next.HandleFinalize(ctx, in)
		}), middleware.After)
}

func (c *requestCounter) snapshot() (int64, map[string]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ops := make(map[string]int64, len(c.byOp))
	for k, v := range c.byOp {
		ops[k] = v
	}
	return c.total.Load(), ops
}

// measure runs op b.N times and reports DynamoDB requests per op next to
// ns/op.
func measure(b *testing.B, env *benchEnv, op func(i int)) {
	b.Helper()
	before, opsBefore := env.counter.snapshot()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		op(i)
	}
	b.StopTimer()
	after, opsAfter := env.counter.snapshot()
	b.ReportMetric(float64(after-before)/float64(b.N), "req/op")
	for name, n := range opsAfter {
		if d := n - opsBefore[name]; d > 0 {
			b.Logf("%s: %d requests for %d ops", name, d, b.N)
		}
	}
}

func benchGuard(b *testing.B, env *benchEnv, opts ...idem.Option) *idem.Guard {
	b.Helper()
	g, err := idem.New(env.store, fmt.Sprintf("bench%d", benchKeySeq.Add(1)), opts...)
	if err != nil {
		b.Fatal(err)
	}
	return g
}

func newKey() string { return fmt.Sprintf("msg-%d", benchKeySeq.Add(1)) }

var payload = []byte(`{"order":"1234","amount":10}`)

func effect(context.Context) ([]byte, error) { return []byte("gift-card-1"), nil }

func expect(b *testing.B, res idem.Result, err error, want idem.Outcome) {
	if err != nil || res.Outcome != want {
		b.Fatalf("outcome %v (%v), want %v", res.Outcome, err, want)
	}
}

// BenchmarkNewMessage: lease mode, a new key each time. Acquire + Complete.
func BenchmarkNewMessage(b *testing.B) {
	env := setupBench(b)
	g := benchGuard(b, env)
	ctx := context.Background()
	measure(b, env, func(int) {
		res, err := g.Do(ctx, newKey(), payload, effect)
		expect(b, res, err, idem.Executed)
	})
}

// BenchmarkNewMessageWithReconcile: BenchmarkNewMessage with a Reconcile:
// a new key costs the same requests (Acquire + Complete) and never asks
// the remote system (reconciles/op, which must be 0).
func BenchmarkNewMessageWithReconcile(b *testing.B) {
	env := setupBench(b)
	g := benchGuard(b, env)
	ctx := context.Background()
	var asked atomic.Int64
	reconcile := idem.Reconcile(func(context.Context) (bool, []byte, error) {
		asked.Add(1)
		return false, nil, nil
	})
	measure(b, env, func(int) {
		res, err := g.Do(ctx, newKey(), payload, effect, reconcile)
		expect(b, res, err, idem.Executed)
	})
	b.ReportMetric(float64(asked.Load())/float64(b.N), "reconciles/op")
	if asked.Load() != 0 {
		b.Fatalf("a new key asked the remote system %d times", asked.Load())
	}
}

// BenchmarkReconciled: the attempt after an unknown outcome (the effect
// erred and may have taken place: released UNKNOWN). It takes the record
// over, asks the remote system once (applied), and writes the receipt:
// Acquire + Complete, and one reconcile, instead of a second effect.
func BenchmarkReconciled(b *testing.B) {
	env := setupBench(b)
	g := benchGuard(b, env)
	ctx := context.Background()
	var asked atomic.Int64
	reconcile := idem.Reconcile(func(context.Context) (bool, []byte, error) {
		asked.Add(1)
		return true, []byte("gift-card-1"), nil
	})
	lost := func(context.Context) ([]byte, error) { return nil, errors.New("the reply was lost") }
	keys := make([]string, b.N)
	for i := range keys {
		keys[i] = newKey()
		if res, _ := g.Do(ctx, keys[i], payload, lost, reconcile); res.Outcome != idem.Failed {
			b.Fatalf("outcome %v, want Failed", res.Outcome)
		}
	}
	measure(b, env, func(i int) {
		res, err := g.Do(ctx, keys[i], payload, effect, reconcile)
		expect(b, res, err, idem.Reconciled)
	})
	b.ReportMetric(float64(asked.Load())/float64(b.N), "reconciles/op")
}

// BenchmarkDuplicate: lease mode, a key already completed. One conditional
// write that fails and returns the receipt.
func BenchmarkDuplicate(b *testing.B) {
	env := setupBench(b)
	g := benchGuard(b, env)
	ctx := context.Background()
	key := newKey()
	res, err := g.Do(ctx, key, payload, effect)
	expect(b, res, err, idem.Executed)
	measure(b, env, func(int) {
		res, err := g.Do(ctx, key, payload, effect)
		expect(b, res, err, idem.Duplicate)
	})
}

// BenchmarkDuplicateCached: as BenchmarkDuplicate with the Guard's cache,
// which answers from memory once it has seen the receipt.
func BenchmarkDuplicateCached(b *testing.B) {
	env := setupBench(b)
	g := benchGuard(b, env, idem.WithCache(1024))
	ctx := context.Background()
	key := newKey()
	res, err := g.Do(ctx, key, payload, effect)
	expect(b, res, err, idem.Executed)
	measure(b, env, func(int) {
		res, err := g.Do(ctx, key, payload, effect)
		expect(b, res, err, idem.Duplicate)
	})
}

// BenchmarkTxNew: transactional mode, a new key each time: the receipt and
// one ledger write in one TransactWriteItems.
func BenchmarkTxNew(b *testing.B) {
	env := setupBench(b)
	g := benchGuard(b, env)
	ctx := context.Background()
	write := ledgerIncrement(env.ledger)
	measure(b, env, func(int) {
		key := newKey()
		res, err := g.DoTx(ctx, key, payload, func(context.Context) (idem.TxEffect, error) {
			return idem.TxEffect{Writes: []any{write(key)}, Result: []byte("ok")}, nil
		})
		expect(b, res, err, idem.Executed)
	})
}

// BenchmarkTxDuplicate: transactional mode, a key already committed: the
// transaction is cancelled and returns the receipt.
func BenchmarkTxDuplicate(b *testing.B) {
	env := setupBench(b)
	g := benchGuard(b, env)
	ctx := context.Background()
	key := newKey()
	write := ledgerIncrement(env.ledger)
	fn := func(context.Context) (idem.TxEffect, error) {
		return idem.TxEffect{Writes: []any{write(key)}, Result: []byte("ok")}, nil
	}
	res, err := g.DoTx(ctx, key, payload, fn)
	expect(b, res, err, idem.Executed)
	measure(b, env, func(int) {
		res, err := g.DoTx(ctx, key, payload, fn)
		expect(b, res, err, idem.Duplicate)
	})
}
