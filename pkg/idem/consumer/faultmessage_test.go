//go:build sqsidem_faults

package consumer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// faultMessage is order(id, key) asking for fault on its receive-th receive
// (0: no ApproximateReceiveCount).
func faultMessage(id, key, fault string, receive int) events.SQSMessage {
	m := order(id, key)
	m.MessageAttributes[FaultAttribute] = events.SQSMessageAttribute{DataType: "String", StringValue: &fault}
	if receive > 0 {
		m.Attributes = map[string]string{"ApproximateReceiveCount": fmt.Sprint(receive)}
	}
	return m
}

// newMessageFaultHarness is newFaultyHarness whose Tx counts its calls: in
// transactional mode the effect is computing the writes.
func newMessageFaultHarness(t *testing.T, env map[string]string) (*harness, *atomic.Int32) {
	t.Helper()
	cfg, err := Load(getenv(mergeEnv(map[string]string{EnvTable: "receipts", EnvKey: "orderId"}, env)))
	if err != nil {
		t.Fatal(err)
	}
	hs := &harness{store: idemtest.NewMemoryStore(), effect: &tally{applied: map[string]int{}}, metrics: &bytes.Buffer{}, logs: &syncBuffer{}}
	var txCalls atomic.Int32
	tx := func(ctx context.Context, key string, msg events.SQSMessage) (idem.TxEffect, error) {
		txCalls.Add(1)
		return hs.effect.tx(ctx, key, msg)
	}
	log := slog.New(slog.NewJSONHandler(hs.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	eff := readFaults(NewEnv(getenv(env))).wrap(Effect{Lease: hs.effect.lease, Tx: tx}, log)
	if hs.h, err = New(cfg, hs.store, eff, WithMetrics(hs.metrics), WithLogger(log)); err != nil {
		t.Fatal(err)
	}
	return hs, &txCalls
}

// atExit is what had happened when the process would have ended.
type atExit struct {
	code    int
	effects int         // lease mode: the effect's runs; transactional: Tx's calls
	status  idem.Status // the key's record, "" for none
	commits int         // transactional writes committed
}

// exitPanic ends a record where the process would have ended: an exit does
// not return.
type exitPanic struct{}

// replaceExit makes exit record the state of key and panic, and stderr a
// buffer, until the test ends.
func replaceExit(t *testing.T, hs *harness, txCalls *atomic.Int32, mode, key string) (exits func() []atExit, lines *syncBuffer) {
	t.Helper()
	var mu sync.Mutex
	var got []atExit
	lines = &syncBuffer{}
	g, err := idem.New(hs.store, DefaultNamespace)
	if err != nil {
		t.Fatal(err)
	}
	savedExit, savedStderr := exit, stderr
	t.Cleanup(func() { exit, stderr = savedExit, savedStderr })
	stderr = lines
	exit = func(code int) {
		s := atExit{code: code, effects: hs.effect.count(key), commits: len(hs.store.Writes())}
		if mode == ModeTransactional {
			s.effects = int(txCalls.Load())
		}
		if rec, ok, err := hs.store.Get(context.Background(), g.StorageKey(key)); err == nil && ok {
			s.status = rec.Status
		}
		mu.Lock()
		got = append(got, s)
		mu.Unlock()
		panic(exitPanic{})
	}
	return func() []atExit {
		mu.Lock()
		defer mu.Unlock()
		return append([]atExit(nil), got...)
	}, lines
}

// TestCrashFromMessage: a message asking for a crash ends the process on
// its first receive, with FaultExitCode and one line on stderr: before the
// effect, or after it and before its receipt (lease mode: the record still
// IN_PROGRESS; transactional: nothing committed). Its second receive runs
// as if nothing were asked.
func TestCrashFromMessage(t *testing.T) {
	for _, mode := range Modes() {
		for _, tc := range []struct {
			point         string
			effectsAtExit int
		}{
			{FaultCrashBefore, 0},
			{FaultCrashAfter, 1},
		} {
			t.Run(mode+" "+tc.point, func(t *testing.T) {
				hs, txCalls := newMessageFaultHarness(t, map[string]string{EnvMode: mode, EnvFaultFromMessage: "true"})
				exits, lines := replaceExit(t, hs, txCalls, mode, "o-crash")
				hs.deliver(t, faultMessage("m1", "o-crash", tc.point, 1))
				wantStatus := idem.StatusInProgress // the lease the crash leaves
				if mode == ModeTransactional {
					wantStatus = "" // no record before the commit
				}
				want := []atExit{{code: FaultExitCode, effects: tc.effectsAtExit, status: wantStatus}}
				if got := exits(); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("at exit %+v, want %+v", got, want)
				}
				if got, want := lines.String(), FaultCrashLine(tc.point, "o-crash")+"\n"; got != want {
					t.Errorf("stderr %q, want %q", got, want)
				}

				// In lease mode the crash left an unknown outcome (the lease
				// ran out): the second receive re-runs it (retry, no
				// reconcile), whether or not the effect had run.
				failed, m := hs.deliver(t, faultMessage("m1", "o-crash", tc.point, 2))
				again := MetricExecuted
				if mode == ModeLease {
					again = MetricRerun
				}
				if len(failed) != 0 || m[again] != 1 || len(exits()) != 1 {
					t.Errorf("second receive: failed %v, metrics %v, %d exits; want %s, no exit", failed, m, len(exits()), again)
				}
				if mode == ModeTransactional && len(hs.store.Writes()) != 1 {
					t.Errorf("writes committed %v, want one", hs.store.Writes())
				}
				if mode == ModeLease && tc.point == FaultCrashBefore && hs.effect.count("o-crash") != 1 {
					t.Errorf("applied %d times, want once", hs.effect.count("o-crash"))
				}
			})
		}
	}
}

// TestPoisonFromMessage: a poison message fails on every receive with an
// error wrapping ErrInjected, a definite one, so that even the policy hold
// never holds its key: Failed every time, never applied.
func TestPoisonFromMessage(t *testing.T) {
	for _, env := range []map[string]string{
		{EnvMode: ModeLease},
		{EnvMode: ModeLease, EnvUnknownOutcome: UnknownHold},
		{EnvMode: ModeTransactional},
	} {
		t.Run(fmt.Sprint(env), func(t *testing.T) {
			env[EnvFaultFromMessage] = "true"
			hs, _ := newMessageFaultHarness(t, env)
			for receive := 1; receive <= 3; receive++ {
				failed, m := hs.deliver(t, faultMessage("m1", "o-poison", FaultPoison, receive), order(fmt.Sprint("h", receive), fmt.Sprint("o-", receive)))
				if fmt.Sprint(failed) != "[m1]" || m[MetricFailed] != 1 || m[MetricExecuted] != 1 {
					t.Fatalf("receive %d: failed %v, metrics %v; want the poison message Failed", receive, failed, m)
				}
			}
			if hs.effect.count("o-poison") != 0 || slices.Contains(hs.store.Writes(), any("write o-poison")) {
				t.Errorf("applied %d, writes %v: the poison key must never be applied", hs.effect.count("o-poison"), hs.store.Writes())
			}
			logs := hs.logs.String()
			if !strings.Contains(logs, "consumer: injected fault: poison message fails every time") || strings.Contains(logs, "o-poison") {
				t.Errorf("logs must give the reason and not the key:\n%s", logs)
			}
		})
	}
	w := &faulty{faults: faults{fromMessage: true}}
	err := w.injected(t.Context(), "o-poison", faultMessage("m1", "o-poison", FaultPoison, 1))
	if !errors.Is(err, ErrInjected) || !idem.IsDefinite(err) {
		t.Errorf("injected = %v: want a definite error wrapping ErrInjected", err)
	}
}

// TestMessageFaultsNeedTheSwitch: without FAULT_FROM_MESSAGE=true the
// attribute is ignored; with it, a value that is no fault is ignored and
// logged.
func TestMessageFaultsNeedTheSwitch(t *testing.T) {
	for _, tc := range []struct {
		name, switched, fault string
	}{
		{"switch unset, crash", "", FaultCrashBefore},
		{"switch false, poison", "false", FaultPoison},
		{"unknown value", "true", "crash-sometime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs, txCalls := newMessageFaultHarness(t, map[string]string{EnvFaultFromMessage: tc.switched})
			exits, _ := replaceExit(t, hs, txCalls, ModeLease, "o-1")
			failed, m := hs.deliver(t, faultMessage("m1", "o-1", tc.fault, 1))
			if len(failed) != 0 || m[MetricExecuted] != 1 || len(exits()) != 0 {
				t.Errorf("failed %v, metrics %v, exits %v; want the effect executed", failed, m, exits())
			}
			if logged := strings.Contains(hs.logs.String(), "unknown fault attribute ignored"); logged != (tc.switched == "true") {
				t.Errorf("unknown value logged: %t\n%s", logged, hs.logs.String())
			}
		})
	}
}

// TestFirstReceive: the receive count says, a copy the runtime sent again
// is never a first, and without a count the first call for a key in this
// process is.
func TestFirstReceive(t *testing.T) {
	w := &faulty{received: map[string]bool{}}
	requeued := faultMessage("m2", "o-1", FaultCrashBefore, 1)
	requeued.MessageAttributes[sqsbatch.RequeuesAttribute] = events.SQSMessageAttribute{DataType: "Number", StringValue: new(string)}
	for i, tc := range []struct {
		key   string
		msg   events.SQSMessage
		first bool
	}{
		{"o-1", faultMessage("m1", "o-1", FaultCrashBefore, 1), true},
		{"o-1", faultMessage("m1", "o-1", FaultCrashBefore, 1), true}, // the count says, not the calls
		{"o-1", faultMessage("m1", "o-1", FaultCrashBefore, 2), false},
		{"o-1", requeued, false},
		{"o-2", faultMessage("m3", "o-2", FaultCrashBefore, 0), true},
		{"o-2", faultMessage("m3", "o-2", FaultCrashBefore, 0), false},
		{"o-3", faultMessage("m4", "o-3", FaultCrashBefore, 0), true},
	} {
		if got := w.firstReceive(tc.key, tc.msg); got != tc.first {
			t.Errorf("%d: firstReceive(%s, receive count %q) = %t, want %t", i, tc.key, tc.msg.Attributes["ApproximateReceiveCount"], got, tc.first)
		}
	}
}
