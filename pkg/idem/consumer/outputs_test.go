package consumer

import (
	"reflect"
	"testing"
)

func TestConsumersOf(t *testing.T) {
	for _, tc := range []struct {
		name    string
		outputs map[string]string
		want    []StackOutputs
	}{
		{"none", map[string]string{"BucketName": "b", "QueueUrl": "q"}, nil},
		{"Default and Orders, sorted", map[string]string{
			"ReceiptTableName": "t", "QueueUrl": "q", "DeadLetterQueueUrl": "d", "ConsumerFunctionName": "f", "Namespace": "consumer",
			"OrdersReceiptTableName": "t2", "OrdersQueueUrl": "q2", "OrdersKey": "orderId", "ProducerFunctionName": "p",
		}, []StackOutputs{
			{ID: "Default", ReceiptTable: "t", QueueURL: "q", DeadLetterQueueURL: "d", FunctionName: "f", Namespace: "consumer"},
			{ID: "Orders", ReceiptTable: "t2", QueueURL: "q2", Key: "orderId"},
		}},
		{"deployed before v0.3.0", map[string]string{
			"OrdersIdempotencyTableName": "t", "OrdersIdempotencyNamespace": "orders", "OrdersIdempotencyKey": "orderId", "OrdersQueueUrl": "q",
		}, []StackOutputs{{ID: "Orders", ReceiptTable: "t", Namespace: "orders", Key: "orderId", QueueURL: "q"}}},
		{"both names: the current one wins, one consumer", map[string]string{
			"ReceiptTableName": "new", "IdempotencyTableName": "old", "Namespace": "n", "IdempotencyNamespace": "old",
		}, []StackOutputs{{ID: "Default", ReceiptTable: "new", Namespace: "n"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ConsumersOf(tc.outputs); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ConsumersOf = %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
