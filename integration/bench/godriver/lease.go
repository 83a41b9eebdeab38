package main

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/integration/bench/internal/driver"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// orderKey is the key of every scenario: the body's orderId, as the
// consumer and Powertools' event_key_jmespath="orderId".
var orderKey = sqsbatch.JSONField("orderId")

// caller is one call of the idempotent function on a message body.
type caller func(ctx context.Context, body string) error

// runLease runs lease-new, lease-dup, cache-dup, tx-new and tx-dup: W
// workers call the guarded function on N bodies.
func runLease(ctx context.Context, e *env, a args, out *driver.Result) (string, error) {
	tx := a.scenario == driver.TxNew || a.scenario == driver.TxDup
	callNew, callDup := e.leaseCalls(a.validation == "on")
	if tx {
		x, err := ledgerExpr()
		if err != nil {
			return "", err
		}
		callNew, callDup = e.txCalls(a.validation == "on", x)
	}

	// Warm-up, not measured: client and pool (one new key per worker, so
	// that all W connections open), and the duplicate path.
	warm := bodies(keys(a.keyPrefix, "warm-", a.workers))
	if n, err := runPool(ctx, a.workers, warm, callNew); n > 0 {
		return "", fmt.Errorf("warm-up failed: %w", err)
	}
	if n, err := runPool(ctx, a.workers, warm, callDup); n > 0 {
		return "", fmt.Errorf("warm-up failed: %w", err)
	}

	ks := keys(a.keyPrefix, "", a.messages)
	msgs := bodies(ks)
	isNew := a.scenario == driver.LeaseNew || a.scenario == driver.TxNew
	if !isNew {
		// Seeded through the same Guard: for cache-dup that fills its cache.
		if n, err := runPool(ctx, a.workers, msgs, callNew); n > 0 {
			return "", fmt.Errorf("seeding failed: %d errors, first: %w", n, err)
		}
	}
	e.effects.reset()
	call := callNew
	if !isNew {
		call = callDup
	}
	var errs int
	var first error
	err := measure(e, a, out, func() error {
		errs, first = runPool(ctx, a.workers, msgs, call)
		return nil
	})
	if err != nil {
		return "", err
	}
	out.Errors = errs
	return checkEffects(isNew, ks, e.effects.reset(), errs, first), nil
}

func bodies(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = body(k)
	}
	return out
}

// invocation is the context of one call: a Lambda invocation with
// functionTimeout left, which the Guard turns into the lease.
func invocation(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, functionTimeout)
}

// leaseCalls are guard.Do on a body: key from the body, the body as the
// payload, the effect reads the order.
func (e *env) leaseCalls(validation bool) (callNew, callDup caller) {
	do := func(ctx context.Context, body string, want idem.Outcome) error {
		key, err := orderKey(events.SQSMessage{Body: body})
		if err != nil {
			return err
		}
		var payload []byte
		if validation {
			payload = []byte(body)
		}
		ctx, cancel := invocation(ctx)
		defer cancel()
		res, err := e.guard.Do(ctx, key, payload, func(context.Context) ([]byte, error) { return e.effects.effect(body) })
		return check(key, res, err, want)
	}
	return func(ctx context.Context, b string) error { return do(ctx, b, idem.Executed) },
		func(ctx context.Context, b string) error { return do(ctx, b, idem.Duplicate) }
}

// txCalls are guard.DoTx on a body: the effect is one ledger write (ADD
// issued 1 on item ledger#<key> of the same table), committed with the
// receipt. The effect counts when the commit reports Executed.
func (e *env) txCalls(validation bool, x expression.Expression) (callNew, callDup caller) {
	do := func(ctx context.Context, body string, want idem.Outcome) error {
		key, err := orderKey(events.SQSMessage{Body: body})
		if err != nil {
			return err
		}
		var payload []byte
		if validation {
			payload = []byte(body)
		}
		result := expectedResult(key)
		res, err := e.guard.DoTx(ctx, key, payload, func(context.Context) (idem.TxEffect, error) {
			return idem.TxEffect{Writes: []any{types.TransactWriteItem{Update: &types.Update{
				TableName:                 aws.String(e.table),
				Key:                       map[string]types.AttributeValue{partitionKey: &types.AttributeValueMemberS{Value: "ledger#" + key}},
				UpdateExpression:          x.Update(),
				ExpressionAttributeNames:  x.Names(),
				ExpressionAttributeValues: x.Values(),
			}}}, Result: result}, nil
		})
		if err == nil && res.Outcome == idem.Executed {
			e.effects.hit(key)
		}
		return check(key, res, err, want)
	}
	return func(ctx context.Context, b string) error { return do(ctx, b, idem.Executed) },
		func(ctx context.Context, b string) error { return do(ctx, b, idem.Duplicate) }
}

// ledgerExpr is the ledger write's expression, built once.
func ledgerExpr() (expression.Expression, error) {
	return expression.NewBuilder().WithUpdate(expression.Add(expression.Name("issued"), expression.Value(1))).Build()
}

func check(key string, res idem.Result, err error, want idem.Outcome) error {
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", key, err)
	case res.Outcome != want:
		return fmt.Errorf("%s: outcome %v, want %v", key, res.Outcome, want)
	case !bytes.Equal(res.Value, expectedResult(key)):
		return fmt.Errorf("%s: %w %q", key, errWrongResult, res.Value)
	}
	return nil
}

// runPool calls call for every body from workers goroutines pulling from one
// list, and returns the number of failed calls and the first error.
func runPool(ctx context.Context, workers int, msgs []string, call caller) (int, error) {
	var (
		next  atomic.Int64
		mu    sync.Mutex
		errs  int
		first error
		wg    sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(msgs) {
					return
				}
				if err := call(ctx, msgs[i]); err != nil {
					mu.Lock()
					errs++
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return errs, first
}
