package consumer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

// TestNewRefusesAMisspeltChoice: New, given a Config by hand, refuses a
// mode or an unknown-outcome policy Load would refuse, rather than run it
// as the default (found from outside: "HOLD" ran as retry, and the effect
// ran twice where at most once was asked).
func TestNewRefusesAMisspeltChoice(t *testing.T) {
	eff := Effect{Lease: func(context.Context, string, events.SQSMessage) ([]byte, error) { return nil, nil }}
	for _, tc := range []struct {
		name string
		cfg  Config
		env  string
	}{
		{"HOLD", Config{Mode: ModeLease, Key: "k", UnknownOutcome: "HOLD"}, EnvUnknownOutcome},
		{"hold ", Config{Mode: ModeLease, Key: "k", UnknownOutcome: "hold "}, EnvUnknownOutcome},
		{"Lease", Config{Mode: "Lease", Key: "k", UnknownOutcome: UnknownHold}, EnvMode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := loaded(t)
			cfg.Mode, cfg.UnknownOutcome = tc.cfg.Mode, tc.cfg.UnknownOutcome
			_, err := New(cfg, idemtest.NewMemoryStore(), eff, WithLogger(slog.New(slog.DiscardHandler)))
			var ce *ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.env) {
				t.Fatalf("New: %v; want a *ConfigError naming %s", err, tc.env)
			}
		})
	}
	// Empty is the default, as an unset variable is to Load.
	empty := loaded(t)
	empty.Mode, empty.UnknownOutcome = "", ""
	if _, err := New(empty, idemtest.NewMemoryStore(), eff,
		WithLogger(slog.New(slog.DiscardHandler))); err != nil {
		t.Fatalf("New with an empty mode and policy: %v", err)
	}
}

// loaded is the configuration of a consumer in namespace ns, as Load reads
// it.
func loaded(t *testing.T) Config {
	t.Helper()
	cfg, err := Load(getenv(map[string]string{EnvTable: "receipts", EnvKey: "orderId", EnvNamespace: "ns"}))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestLeaseModePassesReconcile: in lease mode the effect's Reconcile is
// what settles a record taken over after an unknown outcome (a seeded bug
// dropped it on its way to the batch handler and no unit test saw it);
// in transactional mode there is none to pass.
func TestLeaseModePassesReconcile(t *testing.T) {
	store := idemtest.NewMemoryStore()
	calls, reconciled := 0, 0
	eff := Effect{
		Lease: func(ctx context.Context, key string, _ events.SQSMessage) ([]byte, error) {
			calls++
			if calls == 1 {
				return nil, errors.New("read tcp: i/o timeout") // applied, the reply lost
			}
			return []byte("again"), nil
		},
		Reconcile: func(ctx context.Context, key string, _ events.SQSMessage) (bool, []byte, error) {
			reconciled++
			return true, []byte("card for " + key), nil
		},
	}
	cfg, err := Load(getenv(map[string]string{EnvTable: "receipts", EnvKey: "orderId"}))
	if err != nil {
		t.Fatal(err)
	}
	var metrics bytes.Buffer
	h, err := New(cfg, store, eff, WithMetrics(&metrics), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := h.Handle(t.Context(), events.SQSEvent{Records: []events.SQSMessage{order("m1", "o-1")}}); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 1 || reconciled != 1 {
		t.Fatalf("effect ran %d times, reconciled %d; want 1 and 1 (the copy reconciled, nothing run again)", calls, reconciled)
	}
	if !strings.Contains(metrics.String(), `"Reconciled":1`) {
		t.Fatalf("EMF lines %s; want Reconciled 1", metrics.String())
	}
}

// TestRerunCounted: a copy that runs the effect again over an unknown
// outcome nobody settled (retry, no Reconcile) is done, counted Rerun and
// logged with its storage key: the window the operator chose, made
// visible.
func TestRerunCounted(t *testing.T) {
	hs := newHarness(t, nil)
	hs.effect.fail = map[string]error{"o-1": errors.New("read tcp: i/o timeout")}
	if failed, _ := hs.deliver(t, order("m1", "o-1")); len(failed) != 1 {
		t.Fatalf("first delivery: failed %v; want m1", failed)
	}
	hs.effect.fail = nil
	failed, values := hs.deliver(t, order("m2", "o-1"))
	if len(failed) != 0 || values[MetricRerun] != 1 || values[MetricExecuted] != 0 || hs.effect.count("o-1") != 1 {
		t.Fatalf("copy after the unknown outcome: failed %v, metrics %v, applied %d; want done, Rerun 1, Executed 0", failed, values, hs.effect.count("o-1"))
	}
	g, err := idem.New(hs.store, DefaultNamespace)
	if err != nil {
		t.Fatal(err)
	}
	skey := g.StorageKey("o-1")
	if !strings.Contains(hs.logs.String(), `"outcome":"rerun"`) || !strings.Contains(hs.logs.String(), skey) {
		t.Fatalf("logs: %s; want a rerun line with the storage key %s", hs.logs.String(), skey)
	}
}

// TestReadyLine: the handler logs once what it promises, from what it was
// built with, for a proof to read from the deployed function.
func TestReadyLine(t *testing.T) {
	lease := func(context.Context, string, events.SQSMessage) ([]byte, error) { return nil, nil }
	reconcile := func(context.Context, string, events.SQSMessage) (bool, []byte, error) { return false, nil, nil }
	tx := func(context.Context, string, events.SQSMessage) (idem.TxEffect, error) { return idem.TxEffect{}, nil }
	for _, tc := range []struct {
		mode, unknown string
		eff           Effect
		reconcile     bool
		want          string
	}{
		{ModeLease, UnknownRetry, Effect{Lease: lease}, false, GuaranteeAtLeastOnce},
		{ModeLease, UnknownHold, Effect{Lease: lease}, false, GuaranteeAtMostOnce},
		{ModeLease, UnknownHold, Effect{Lease: lease, Reconcile: reconcile}, true, GuaranteeExactlyOnce},
		{ModeTransactional, UnknownRetry, Effect{Tx: tx, Reconcile: reconcile}, false, GuaranteeExactlyOnce},
	} {
		var logs bytes.Buffer
		cfg := loaded(t)
		cfg.Mode, cfg.UnknownOutcome = tc.mode, tc.unknown
		if _, err := New(cfg, idemtest.NewMemoryStore(), tc.eff, WithLogger(slog.New(slog.NewJSONHandler(&logs, nil)))); err != nil {
			t.Fatal(err)
		}
		var line map[string]any
		if err := json.Unmarshal(logs.Bytes(), &line); err != nil {
			t.Fatalf("%s/%s: %v: %s", tc.mode, tc.unknown, err, logs.String())
		}
		if line["msg"] != LogReady || line[ReadyMode] != tc.mode || line[ReadyUnknownOutcome] != tc.unknown ||
			line[ReadyReconcile] != tc.reconcile || line[ReadyGuarantee] != tc.want || line[ReadyNamespace] != "ns" {
			t.Errorf("%s/%s/%v: %v; want guarantee %s", tc.mode, tc.unknown, tc.reconcile, line, tc.want)
		}
	}
}

// TestReadyLineWhateverTheLevel: LOG_LEVEL=WARN drops INFO lines, not the
// ready line, which a proof reads.
func TestReadyLineWhateverTheLevel(t *testing.T) {
	var logs bytes.Buffer
	eff := Effect{Lease: func(context.Context, string, events.SQSMessage) ([]byte, error) { return nil, nil }}
	l := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if _, err := New(loaded(t), idemtest.NewMemoryStore(), eff, WithLogger(l)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), `"msg":"`+LogReady+`"`) || !strings.Contains(logs.String(), `"level":"WARN"`) {
		t.Fatalf("logs at WARN: %q; want the ready line, at WARN", logs.String())
	}
}
