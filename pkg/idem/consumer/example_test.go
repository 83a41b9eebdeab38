package consumer_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

// A team's whole main: the runtime reads the environment the construct
// set, the effect reads its own variable.
func ExampleStart() {
	consumer.Start(func(ctx context.Context, rt *consumer.Runtime) (consumer.Effect, error) {
		table := rt.Env.Required("POINTS_TABLE")
		return consumer.Effect{Tx: func(ctx context.Context, key string, msg events.SQSMessage) (idem.TxEffect, error) {
			return idem.TxEffect{Writes: []any{addPoints(table, key)}}, nil
		}}, nil
	})
}

func addPoints(table, key string) any { return nil } // a types.TransactWriteItem in a real effect

// New builds the handler Start runs, on any store: a unit test of an
// effect needs no Lambda and no AWS.
func ExampleNew() {
	cfg, err := consumer.Load(func(name string) string {
		return map[string]string{consumer.EnvTable: "receipts", consumer.EnvKey: "orderId"}[name]
	})
	if err != nil {
		panic(err)
	}
	issued := 0
	h, err := consumer.New(cfg, idemtest.NewMemoryStore(), consumer.Effect{
		Lease: func(ctx context.Context, key string, msg events.SQSMessage) ([]byte, error) {
			issued++
			return []byte("gift card for " + key), nil
		},
	}, consumer.WithMetrics(io.Discard), consumer.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		panic(err)
	}
	copies := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", Body: `{"orderId":"o-1"}`},
		{MessageId: "m2", Body: `{"orderId":"o-1"}`}, // the same order again
	}}
	resp, err := h.Handle(context.Background(), copies)
	fmt.Println(len(resp.BatchItemFailures), "failed,", issued, "issued,", err)
	// Output: 0 failed, 1 issued, <nil>
}
