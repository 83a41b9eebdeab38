package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

// setup is the effect of the Charges function whose construct is
// infra/exactlyonce's Example; its main.go is
//
//	func main() { consumer.Start(setup) }
//
// The effect is DynamoDB writes (Effect.Tx), so the construct's Config says
// Mode: consumer.ModeTransactional: in the default mode, lease, the
// function would stop at init ("IDEM_MODE: lease, but the effect has no
// Lease function"). It has no Key function of its own: the key is the
// construct's Config.Key ("paymentId"), passed as IDEM_KEY. The README's
// way 2 copies setup; Example_charges runs it.
func setup(ctx context.Context, rt *consumer.Runtime) (consumer.Effect, error) {
	table := rt.Env.Required("PAYMENTS_TABLE") // the construct's Environment
	return consumer.Effect{Tx: func(ctx context.Context, key string, msg events.SQSMessage) (idem.TxEffect, error) {
		return idem.TxEffect{Writes: []any{charge(table, key, msg.Body)}}, nil // committed with the receipt
	}}, nil
}

// charge is the payment's write: a types.TransactWriteItem in a real
// effect, a description here (the memory store takes writes of any type).
func charge(table, key, body string) any { return table + ": charge " + key }

// A team's whole main is one call: Start reads the environment the
// construct set, runs setup (whose effect here is transactional: see
// setup), builds the store, the guard and the batch handler, and serves the
// queue's batches; anything wrong stops the instance at init, every
// problem named.
func ExampleStart() {
	consumer.Start(setup)
}

// What Start does at init, without Lambda and AWS: the environment
// infra/exactlyonce's Example sets (Config{Mode: transactional, Key:
// "paymentId", Namespace: "charges"} and PAYMENTS_TABLE), setup run on it,
// the effect checked against the mode, then a payment delivered twice. The
// same effect under a Config without Mode (lease, the default) is refused,
// as Start refuses it at init.
func Example_charges() {
	env := map[string]string{
		consumer.EnvTable:     "receipts",
		consumer.EnvNamespace: "charges",
		consumer.EnvMode:      consumer.ModeTransactional,
		consumer.EnvKey:       "paymentId",
		"PAYMENTS_TABLE":      "payments",
	}
	build := func(store *idemtest.MemoryStore) (*consumer.Handler, error) {
		getenv := func(name string) string { return env[name] }
		cfg, err := consumer.Load(getenv)
		if err != nil {
			return nil, err
		}
		rt := &consumer.Runtime{Config: cfg, Env: consumer.NewEnv(getenv)}
		eff, err := setup(context.Background(), rt)
		if err := errors.Join(err, rt.Env.Err("charges")); err != nil {
			return nil, err
		}
		return consumer.New(cfg, store, eff, consumer.WithMetrics(io.Discard), consumer.WithLogger(slog.New(slog.DiscardHandler)))
	}

	store := idemtest.NewMemoryStore()
	h, err := build(store)
	if err != nil {
		panic(err)
	}
	copies := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", Body: `{"paymentId":"p-1","amountCents":2500}`},
		{MessageId: "m2", Body: `{"paymentId":"p-1","amountCents":2500}`}, // the same payment again
	}}
	resp, err := h.Handle(context.Background(), copies)
	fmt.Println(len(resp.BatchItemFailures), "failed,", err, "- committed:", store.Writes())

	delete(env, consumer.EnvMode) // a construct Config without Mode: lease
	_, err = build(idemtest.NewMemoryStore())
	fmt.Println(err)
	// Output:
	// 0 failed, <nil> - committed: [payments: charge p-1]
	// consumer configuration: IDEM_MODE: lease, but the effect has no Lease function (it implements [transactional])
}

// In lease mode (the construct's default Mode) the effect is a Lease: any
// side effect, here a call to a partner's API with the key as its
// Idempotency-Key. Its Reconcile asks the partner whether an attempt whose
// outcome is unknown (a lost reply, a crash after the call) went through,
// before the effect runs again. infra/exactlyonce's Example_lease is its
// construct (Mode lease, Key "noticeId", UnknownOutcome hold).
func ExampleStart_lease() {
	consumer.Start(func(ctx context.Context, rt *consumer.Runtime) (consumer.Effect, error) {
		partner := rt.Env.Required("PARTNER_URL") // the construct's Environment
		return consumer.Effect{
			Lease: func(ctx context.Context, key string, msg events.SQSMessage) ([]byte, error) {
				return notify(ctx, partner, key, msg.Body) // Idempotency-Key: key; a refusal (4xx) is idem.Definite
			},
			Reconcile: func(ctx context.Context, key string, msg events.SQSMessage) (applied bool, result []byte, err error) {
				return lookUp(ctx, partner, key) // applied, not applied, or an error: cannot tell
			},
		}, nil
	})
}

// notify is the partner's call: an HTTP POST in a real effect.
func notify(ctx context.Context, partner, key, body string) ([]byte, error) { return nil, nil }

// lookUp asks the partner about key: an HTTP GET in a real effect.
func lookUp(ctx context.Context, partner, key string) (bool, []byte, error) { return false, nil, nil }

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
