package main

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestDiscovery finds a consumer by its stack's outputs: the only one, one
// named with --consumer (a prefix; "Default" is none), flags over outputs;
// the same in a stack deployed before v0.3.0, with the legacy names.
func TestDiscovery(t *testing.T) {
	two := map[string]string{
		"ReceiptTableName": "t-default", "Namespace": "consumer", "QueueUrl": "q-default",
		"OrdersReceiptTableName": "t-orders", "OrdersNamespace": "orders", "OrdersQueueUrl": "q-orders",
		"OrdersDeadLetterQueueUrl": "d-orders", "OrdersKey": "orderId", "ProducerFunctionName": "p",
	}
	// A stack deployed before v0.3.0: the same consumers under the legacy
	// output names (consumer.LegacyOutput*), read until v0.4.0.
	legacy := map[string]string{
		"IdempotencyTableName": "t-default", "IdempotencyNamespace": "consumer", "QueueUrl": "q-default",
		"OrdersIdempotencyTableName": "t-orders", "OrdersIdempotencyNamespace": "orders", "OrdersQueueUrl": "q-orders",
		"OrdersDeadLetterQueueUrl": "d-orders", "OrdersIdempotencyKey": "orderId", "ProducerFunctionName": "p",
	}
	for _, tc := range []struct {
		name    string
		outputs map[string]string
		flags   globals
		want    resources
		err     error
	}{
		{"one consumer", map[string]string{"ReceiptTableName": "t", "Namespace": "ns", "QueueUrl": "q", "DeadLetterQueueUrl": "d", "Key": "id"},
			globals{}, resources{table: "t", namespace: "ns", queueURL: "q", dlqURL: "d", keyField: "id"}, nil},
		{"no namespace output", map[string]string{"ReceiptTableName": "t"}, globals{}, resources{table: "t", namespace: "consumer"}, nil},
		{"legacy: one consumer", map[string]string{"IdempotencyTableName": "t", "IdempotencyNamespace": "ns", "QueueUrl": "q", "DeadLetterQueueUrl": "d", "IdempotencyKey": "id"},
			globals{}, resources{table: "t", namespace: "ns", queueURL: "q", dlqURL: "d", keyField: "id"}, nil},
		{"legacy: two consumers", legacy, globals{}, resources{}, errUsage},
		{"legacy: named", legacy, globals{consumer: "Orders"}, resources{table: "t-orders", namespace: "orders", queueURL: "q-orders", dlqURL: "d-orders", keyField: "orderId"}, nil},
		{"legacy: default", legacy, globals{consumer: "Default"}, resources{table: "t-default", namespace: "consumer", queueURL: "q-default"}, nil},
		{"two consumers", two, globals{}, resources{}, errUsage},
		{"named", two, globals{consumer: "Orders"}, resources{table: "t-orders", namespace: "orders", queueURL: "q-orders", dlqURL: "d-orders", keyField: "orderId"}, nil},
		{"default", two, globals{consumer: "Default"}, resources{table: "t-default", namespace: "consumer", queueURL: "q-default"}, nil},
		{"unknown consumer", two, globals{consumer: "Refunds"}, resources{}, errNotFound},
		{"not our stack", map[string]string{"BucketName": "b"}, globals{}, resources{}, errNotFound},
		{"flags win", two, globals{consumer: "Orders", table: "other", namespace: "ns2", keyField: "k"},
			resources{table: "other", namespace: "ns2", queueURL: "q-orders", dlqURL: "d-orders", keyField: "k"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.cfn.stacks["s"] = tc.outputs
			g := tc.flags
			g.stack = "s"
			a := &app{globals: g, connect: func(context.Context, globals) (*clients, error) { return &clients{cfn: h.cfn}, nil }}
			got, err := a.resources(t.Context())
			if !errors.Is(err, tc.err) || (err == nil && got != tc.want) {
				t.Fatalf("resources: %+v, %v; want %+v, %v", got, err, tc.want, tc.err)
			}
		})
	}
}

func TestUnknownStack(t *testing.T) {
	h := newHarness(t)
	if code := h.run("stats", "--stack", "nope"); code != exitRuntime || !strings.Contains(h.errOut.String(), `stack "nope" does not exist`) {
		t.Fatalf("exit %d: %s", code, h.errOut.String())
	}
	if h.ddb.count("DescribeTable") != 0 {
		t.Error("went on to the table")
	}
}

func TestNoCredentials(t *testing.T) {
	h := newHarness(t)
	h.connectErr = errors.Join(errNoCredentials, errors.New("no EC2 IMDS role found"))
	h.fails(exitRuntime, "no AWS credentials", "list")
}
