//go:build sqsidem_faults

package consumer

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

func TestReadFaults(t *testing.T) {
	env := map[string]string{
		EnvFaultFailKeys: "a, b", EnvFaultFailTimes: "2", EnvFaultHookURL: "http://localhost:9/h", EnvFaultPoisonKeys: "p",
		EnvFaultNoReconcile: "true", EnvFaultFromMessage: "true",
	}
	e := NewEnv(getenv(env))
	want := faults{hookURL: "http://localhost:9/h", failKeys: []string{"a", "b"}, failTimes: 2, poison: []string{"p"}, noReconcile: true, fromMessage: true}
	if f := readFaults(e); !reflect.DeepEqual(f, want) || e.Err("t") != nil {
		t.Errorf("faults = %+v, %v\nwant %+v", f, e.Err("t"), want)
	}
	noop := func(context.Context, string, events.SQSMessage) (bool, []byte, error) { return false, nil, nil }
	if eff := want.wrap(Effect{Reconcile: noop}, slog.New(slog.DiscardHandler)); eff.Reconcile != nil {
		t.Error("FAULT_NO_RECONCILE=true kept the effect's Reconcile")
	}
	if eff := (faults{}).wrap(Effect{Reconcile: noop}, slog.New(slog.DiscardHandler)); eff.Reconcile == nil {
		t.Error("no fault dropped the effect's Reconcile")
	}
}

// TestBadFaultsStopTheInstance: with the tag, a bad switch is reported with
// the configuration's problems.
func TestBadFaultsStopTheInstance(t *testing.T) {
	offline(t)
	var table string
	env := map[string]string{EnvTable: "receipts", EnvKey: "k", EnvFaultFailTimes: "x", EnvFaultHookURL: "/relative", EnvFaultFromMessage: "yes"}
	_, err := build(t.Context(), leaseSetup(&table), getenv(env))
	if got, want := problemVars(t, err), []string{EnvFaultFailTimes, EnvFaultFromMessage, EnvFaultHookURL, "POINTS_TABLE"}; !slices.Equal(got, want) {
		t.Errorf("problems with %v, want %v", got, want)
	}
}

func TestPoisonKeys(t *testing.T) {
	for _, mode := range Modes() {
		t.Run(mode, func(t *testing.T) {
			hs := newFaultyHarness(t, map[string]string{EnvMode: mode, EnvFaultPoisonKeys: "o-poison"})
			for i := range 3 {
				failed, m := hs.deliver(t, order(fmt.Sprint("m", i), "o-poison"), order(fmt.Sprint("h", i), fmt.Sprint("o-", i)))
				if !slices.Equal(failed, []string{fmt.Sprint("m", i)}) || m[MetricFailed] != 1 {
					t.Fatalf("delivery %d: failed %v, metrics %v; want the poison key Failed", i, failed, m)
				}
			}
			logs := hs.logs.String()
			if !strings.Contains(logs, "consumer: injected fault: poison key fails every time") || strings.Contains(logs, "o-poison") {
				t.Errorf("logs must give the reason and not the key:\n%s", logs)
			}
		})
	}
}

// hookServer records the hook's calls as "point key".
func hookServer(t *testing.T) (url string, calls func() []string) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r.URL.Query().Get("point")+" "+r.URL.Query().Get("key"))
		w.WriteHeader(http.StatusTeapot) // ignored
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/hook", func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

func TestHookAndFailKeys(t *testing.T) {
	for _, mode := range Modes() {
		t.Run(mode, func(t *testing.T) {
			url, calls := hookServer(t)
			hs := newFaultyHarness(t, map[string]string{
				EnvMode: mode, EnvFaultHookURL: url, EnvFaultFailKeys: "o-flaky, o-other", EnvFaultFailTimes: "2",
			})
			// An injected failure is not definite: in lease mode the record
			// is UNKNOWN, and the run after it is a re-run (retry, no
			// reconcile).
			third := MetricExecuted
			if mode == ModeLease {
				third = MetricRerun
			}
			for i, want := range []string{MetricFailed, MetricFailed, third, MetricDuplicate} {
				failed, m := hs.deliver(t, order(fmt.Sprint("m", i), "o-flaky"))
				if m[want] != 1 || (len(failed) == 1) != (want == MetricFailed) {
					t.Fatalf("delivery %d: failed %v, metrics %v; want %s", i, failed, m, want)
				}
			}
			wantHooks := []string{
				"before-effect o-flaky", "before-effect o-flaky", "before-effect o-flaky", "after-effect o-flaky",
			}
			if got := calls(); !slices.Equal(got, wantHooks) {
				t.Errorf("hooks = %v, want %v", got, wantHooks)
			}
			if strings.Contains(hs.logs.String(), "o-flaky") {
				t.Errorf("logs name the key:\n%s", hs.logs.String())
			}
		})
	}
}

func TestHookUnreachable(t *testing.T) {
	hs := newFaultyHarness(t, map[string]string{EnvFaultHookURL: "http://127.0.0.1:1/hook"}) // nothing listens
	if failed, _ := hs.deliver(t, order("m1", "o-unreachable")); len(failed) != 0 {
		t.Errorf("failed = %v: an unreachable hook must be ignored", failed)
	}
	if logs := hs.logs.String(); !strings.Contains(logs, "fault hook") || strings.Contains(logs, "o-unreachable") {
		t.Errorf("the failed hook call must be logged, without the key:\n%s", logs)
	}
}

// TestFailKeysByReceiveCount: without a lease (transactional mode) an
// attempt is the message's receive count, the same on every instance.
func TestFailKeysByReceiveCount(t *testing.T) {
	env := map[string]string{EnvMode: ModeTransactional, EnvFaultFailKeys: "o-1", EnvFaultFailTimes: "1"}
	for i, want := range []string{MetricFailed, MetricExecuted} {
		hs := newFaultyHarness(t, env) // a new instance every time
		m := order(fmt.Sprint("m", i), "o-1")
		m.Attributes = map[string]string{"ApproximateReceiveCount": fmt.Sprint(i + 1)}
		if _, metrics := hs.deliver(t, m); metrics[want] != 1 {
			t.Errorf("receive %d: metrics %v, want %s", i+1, metrics, want)
		}
	}
}
