package exactlyonce_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/exactlyonce/sqsidem/infra/exactlyonce"
)

// TestOutputNames: the outputs of consumer "Orders", spelled out. idemctl
// of another release and teams' scripts find a consumer by these names, so
// a rename is a CHANGELOG entry and a Legacy constant idemctl still reads,
// not an edit of consumer's Output constants alone.
func TestOutputNames(t *testing.T) {
	_, tpl := synthConsumer(t, exactlyonce.ConsumerProps{Config: exactlyonce.Config{Key: "orderId", Namespace: "orders"}})
	want := []string{
		"OrdersConsumerFunctionName", "OrdersDeadLetterQueueUrl", "OrdersKey",
		"OrdersNamespace", "OrdersQueueUrl", "OrdersReceiptTableName",
	}
	if got := slices.Sorted(maps.Keys(tpl.Outputs)); !slices.Equal(got, want) {
		t.Errorf("outputs %v, want %v", got, want)
	}
	for name, value := range map[string]string{"OrdersNamespace": "orders", "OrdersKey": "orderId"} {
		if o, _ := tpl.Outputs[name].(map[string]any); o["Value"] != value {
			t.Errorf("%s = %v, want the value %q", name, tpl.Outputs[name], value)
		}
	}
}
