//go:build !sqsidem_faults

package consumer

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// TestWithoutFaultsTag: a build without the tag sqsidem_faults (what is
// deployed) neither reads nor honours a FAULT_* variable, bad ones
// included, nor a message's FaultAttribute (a crash would end this test's
// process): the effect runs as written.
func TestWithoutFaultsTag(t *testing.T) {
	offline(t)
	env := map[string]string{
		EnvTable: "receipts", EnvKey: "orderId", "POINTS_TABLE": "points",
		EnvFaultPoisonKeys: "o-1", EnvFaultFailKeys: "o-1", EnvFaultFailTimes: "often", EnvFaultHookURL: "not a url",
		EnvFaultFromMessage: "maybe",
	}
	read := map[string]bool{}
	var table string
	if _, err := build(t.Context(), leaseSetup(&table), func(k string) string { read[k] = true; return env[k] }); err != nil {
		t.Fatal(err)
	}
	for k := range read {
		if strings.HasPrefix(k, "FAULT_") {
			t.Errorf("%s was read", k)
		}
	}
	for _, mode := range Modes() {
		env[EnvMode] = mode
		hs := newFaultyHarness(t, env)
		if failed, m := hs.deliver(t, order("m1", "o-1")); len(failed) != 0 || m[MetricExecuted] != 1 {
			t.Errorf("%s: failed %v, metrics %v; want the effect executed", mode, failed, m)
		}
		env[EnvFaultFromMessage] = "true"
		hs = newFaultyHarness(t, env)
		var msgs []events.SQSMessage
		for i, fault := range []string{FaultPoison, FaultCrashBefore, FaultCrashAfter} {
			m := message(fmt.Sprint("m", i), fmt.Sprintf(`{"orderId":"o-%d"}`, i), map[string]string{FaultAttribute: fault})
			m.Attributes = map[string]string{"ApproximateReceiveCount": "1"}
			msgs = append(msgs, m)
		}
		if failed, m := hs.deliver(t, msgs...); len(failed) != 0 || m[MetricExecuted] != 3 {
			t.Errorf("%s, %s=true: failed %v, metrics %v; want every message executed", mode, EnvFaultFromMessage, failed, m)
		}
	}
}
