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
	if n, err := runPool(ctx, a.workers, len(warm), each(warm, callNew)); n > 0 {
		return "", fmt.Errorf("warm-up failed: %w", err)
	}
	if n, err := runPool(ctx, a.workers, len(warm), each(warm, callDup)); n > 0 {
		return "", fmt.Errorf("warm-up failed: %w", err)
	}

	ks := keys(a.keyPrefix, "", a.messages)
	msgs := bodies(ks)
	isNew := a.scenario == driver.LeaseNew || a.scenario == driver.TxNew
	if !isNew {
		// Seeded through the same Guard: for cache-dup that fills its cache.
		if n, err := runPool(ctx, a.workers, len(msgs), each(msgs, callNew)); n > 0 {
			return "", fmt.Errorf("seeding failed: %d errors, first: %w", n, err)
		}
	}
	if a.floor {
		return e.runFloor(ctx, a, out, tx, callNew, [][]string{ks})
	}
	e.effects.reset()
	call := callNew
	if !isNew {
		call = callDup
	}
	var errs int
	var first error
	err := measure(e, a, out, func() error {
		errs, first = runPool(ctx, a.workers, len(msgs), each(msgs, call))
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
			return idem.TxEffect{Writes: []any{e.ledgerWrite(x, key)}, Result: result}, nil
		})
		if err == nil && res.Outcome == idem.Executed {
			e.effects.hit(key)
		}
		return check(key, res, err, want)
	}
	return func(ctx context.Context, b string) error { return do(ctx, b, idem.Executed) },
		func(ctx context.Context, b string) error { return do(ctx, b, idem.Duplicate) }
}

// ledgerWrite is the transactional effect of key: ADD issued 1 on item
// ledger#<key> of the receipt table.
func (e *env) ledgerWrite(x expression.Expression, key string) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(e.table),
		Key:                       map[string]types.AttributeValue{partitionKey: &types.AttributeValueMemberS{Value: "ledger#" + key}},
		UpdateExpression:          x.Update(),
		ExpressionAttributeNames:  x.Names(),
		ExpressionAttributeValues: x.Values(),
	}}
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

// each is call on the i-th body.
func each(msgs []string, call caller) func(context.Context, int) error {
	return func(ctx context.Context, i int) error { return call(ctx, msgs[i]) }
}

// runPool calls call for 0..n-1 from workers goroutines pulling from one
// counter, and returns the number of failed calls and the first error.
func runPool(ctx context.Context, workers, n int, call func(ctx context.Context, i int) error) (int, error) {
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
				if i >= n {
					return
				}
				if err := call(ctx, i); err != nil {
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

// runFloor is the measured loop of --floor: it captures the requests of one
// new message sent through pkg/idem, builds them for every key, and sends
// them from W workers (lease-new, tx-new: one round of all keys) or one
// round of at most W at a time per group (batch: a group is an event's
// records, sent at once, the next event after).
func (e *env) runFloor(ctx context.Context, a args, out *driver.Result, tx bool, callNew caller, groups [][]string) (string, error) {
	r, err := e.captureMessage(ctx, tx, callNew, keys(a.keyPrefix, "capture-", 1)[0])
	if err != nil {
		return "", err
	}
	msgs := make([][]message, len(groups))
	for g, ks := range groups {
		if msgs[g], err = floorMessages(r, ks); err != nil {
			return "", err
		}
	}
	e.effects.reset() // the capture's
	var errs int
	var first error
	err = measure(e, a, out, func() error {
		for _, group := range msgs {
			n, err := runPool(ctx, a.workers, len(group), func(ctx context.Context, i int) error { return e.sendMessage(ctx, r, group[i]) })
			errs += n
			if first == nil {
				first = err
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	out.Errors = errs
	if r.effectAfter < 0 {
		if errs > 0 {
			return fmt.Sprintf("%d messages failed, first: %v", errs, first), nil
		}
		return "", nil
	}
	var all []string
	for _, ks := range groups {
		all = append(all, ks...)
	}
	return checkEffects(true, all, e.effects.reset(), errs, first), nil
}
