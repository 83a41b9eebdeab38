package main

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/exactlyonce/sqsidem/integration/bench/internal/driver"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// runBatch runs batch-new, batch-dup and batch-tx-new: R SQS events of 10
// records, one after the other, each a fresh invocation, through sqsbatch
// (or, with --floor, each event's records' requests sent at once).
func runBatch(ctx context.Context, e *env, a args, out *driver.Result) (string, error) {
	tx := a.scenario == driver.BatchTxNew
	h, err := e.batchHandler(a, tx)
	if err != nil {
		return "", err
	}
	runEvents := func(evs []events.SQSEvent) (failed int, first error) {
		for i, ev := range evs {
			resp, err := invoke(ctx, h, ev, i)
			if err == nil && len(resp.BatchItemFailures) > 0 {
				err = fmt.Errorf("batchItemFailures: %v", resp.BatchItemFailures[:min(3, len(resp.BatchItemFailures))])
			}
			failed += len(resp.BatchItemFailures)
			if err != nil && first == nil {
				first = err
			}
		}
		return failed, first
	}
	eventsFor := func(keys []string, salt string) []events.SQSEvent {
		var evs []events.SQSEvent
		for i := 0; i < len(keys); i += driver.BatchSize {
			evs = append(evs, sqsEvent(keys[i:min(i+driver.BatchSize, len(keys))], salt+strconv.Itoa(i/driver.BatchSize)))
		}
		return evs
	}

	// Warm-up, not measured: one new event (all 10 records, so that the
	// connections open) and the same again (the duplicate path).
	warm := keys(a.keyPrefix, "warm-", driver.BatchSize)
	for _, salt := range []string{"warm-new", "warm-dup"} {
		if n, err := runEvents(eventsFor(warm, salt)); n > 0 || err != nil {
			return "", fmt.Errorf("warm-up failed: %v", err)
		}
	}
	ks := keys(a.keyPrefix, "", a.events*driver.BatchSize)
	isNew := a.scenario != driver.BatchDup
	if a.floor {
		callNew, _ := e.leaseCalls(a.validation == "on")
		if tx {
			x, err := ledgerExpr()
			if err != nil {
				return "", err
			}
			callNew, _ = e.txCalls(a.validation == "on", x)
		}
		var groups [][]string
		for i := 0; i < len(ks); i += driver.BatchSize {
			groups = append(groups, ks[i:min(i+driver.BatchSize, len(ks))])
		}
		failure, err := e.runFloor(ctx, a, out, tx, callNew, groups)
		out.PerEventSeconds = out.Seconds / float64(a.events)
		out.Events, out.BatchSize = a.events, driver.BatchSize
		return failure, err
	}
	if !isNew {
		if n, err := runEvents(eventsFor(ks, "seed")); n > 0 || err != nil {
			return "", fmt.Errorf("seeding failed: %d record failures, first: %v", n, err)
		}
	}
	evs := eventsFor(ks, "run") // built before the clock starts
	e.effects.reset()

	var failed int
	var first error
	err = measure(e, a, out, func() error {
		failed, first = runEvents(evs)
		return nil
	})
	if err != nil {
		return "", err
	}
	out.Errors = failed
	out.PerEventSeconds = out.Seconds / float64(a.events)
	out.Events, out.BatchSize = a.events, driver.BatchSize
	return checkEffects(isNew, ks, e.effects.reset(), failed, first), nil
}

// batchHandler is the sqsbatch.Handler of the batch scenarios, as the
// consumer builds it: lease mode (New), or transactional (NewTx) with the
// ledger write of tx-new as each record's effect.
func (e *env) batchHandler(a args, tx bool) (*sqsbatch.Handler, error) {
	opts := []sqsbatch.Option{
		sqsbatch.WithConcurrency(a.workers),
		// Powertools logs nothing per record; sqsbatch logs every record at
		// INFO. Warnings and errors still reach stderr.
		sqsbatch.WithLogger(slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))),
	}
	if a.validation == "off" {
		opts = append(opts, sqsbatch.WithPayload(func(events.SQSMessage) []byte { return nil }))
	}
	if !tx {
		return sqsbatch.New(e.guard, orderKey, func(_ context.Context, _ string, msg events.SQSMessage) ([]byte, error) {
			return e.effects.effect(msg.Body)
		}, opts...)
	}
	x, err := ledgerExpr()
	if err != nil {
		return nil, err
	}
	// A TxFunc runs for duplicates too: the effect counts when the commit
	// reports Executed.
	opts = append(opts, sqsbatch.WithRecordHook(func(_ context.Context, r sqsbatch.RecordResult) {
		if r.Outcome == idem.Executed {
			e.effects.hit(r.Key)
		}
	}))
	return sqsbatch.NewTx(e.guard, orderKey, func(_ context.Context, key string, _ events.SQSMessage) (idem.TxEffect, error) {
		return idem.TxEffect{Writes: []any{e.ledgerWrite(x, key)}, Result: expectedResult(key)}, nil
	}, opts...)
}

// invoke is one Lambda invocation: a context with the deadline and the
// Lambda context the runtime would give.
func invoke(ctx context.Context, h *sqsbatch.Handler, ev events.SQSEvent, i int) (events.SQSEventResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, functionTimeout)
	defer cancel()
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{
		AwsRequestID:       fmt.Sprintf("00000000-0000-0000-0000-%012d", i),
		InvokedFunctionArn: "arn:aws:lambda:us-east-1:000000000000:function:bench",
	})
	return h.Handle(ctx, ev)
}

// sqsEvent is an SQS event as Lambda delivers it, as the Powertools
// drivers build it (distinct message ids).
func sqsEvent(keys []string, salt string) events.SQSEvent {
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	ev := events.SQSEvent{Records: make([]events.SQSMessage, len(keys))}
	for i, key := range keys {
		b := body(key)
		sum := md5.Sum([]byte(b))
		ev.Records[i] = events.SQSMessage{
			MessageId:     fmt.Sprintf("%s-%02d-%s", salt, i, randomHex(8)),
			ReceiptHandle: "AQEB" + randomHex(48),
			Body:          b,
			Md5OfBody:     hex.EncodeToString(sum[:]),
			Attributes: map[string]string{
				"ApproximateReceiveCount":          "1",
				"SentTimestamp":                    now,
				"SenderId":                         "AIDAIENQZJOLO23YVJ4VO",
				"ApproximateFirstReceiveTimestamp": now,
			},
			MessageAttributes: map[string]events.SQSMessageAttribute{},
			EventSource:       "aws:sqs",
			EventSourceARN:    "arn:aws:sqs:us-east-1:000000000000:orders",
			AWSRegion:         "us-east-1",
		}
	}
	return ev
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
