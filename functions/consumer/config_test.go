package main

import (
	"errors"
	"log/slog"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/functions/internal/envconfig"
)

func TestLoadConfigDefaults(t *testing.T) {
	cfg, err := LoadConfig(func(k string) string { return baseEnv()[k] })
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Guard: envconfig.Guard{
			IdemTable: "idem", Namespace: "consumer",
			Retention: 168 * time.Hour, SafetyMargin: 2 * time.Second, CacheSize: 1000,
			LogLevel: slog.LevelInfo,
		},
		LedgerTable: "ledger", Mode: ModeLease, Concurrency: 10, Faults: Faults{FailTimes: 1},
	}
	if cfg.Faults.FailKeys != nil {
		t.Errorf("fail keys = %v, want none", cfg.Faults.FailKeys)
	}
	cfg.Faults.FailKeys = nil
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("config = %+v\nwant %+v", cfg, want)
	}
}

func TestLoadConfigAll(t *testing.T) {
	env := map[string]string{
		"IDEM_TABLE": "i", "LEDGER_TABLE": "l", "IDEM_NAMESPACE": "gift", "IDEM_MODE": "Transactional",
		"IDEM_RETENTION": "24h", "IDEM_SAFETY_MARGIN": "500ms", "IDEM_LEASE": "30s", "IDEM_CACHE_SIZE": "0",
		"BATCH_CONCURRENCY": "3", "LOG_LEVEL": "debug", "LOG_BODIES": "true",
		"FAULT_EFFECT_FAIL_KEYS": "a,b", "FAULT_EFFECT_FAIL_TIMES": "2", "FAULT_HOOK_URL": "http://localhost:9/h",
	}
	cfg, err := LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Mode != ModeTransactional || cfg.Lease != 30*time.Second || cfg.CacheSize != 0 ||
		cfg.Concurrency != 3 || cfg.LogLevel != slog.LevelDebug || !cfg.LogBodies ||
		!cfg.Faults.FailKeys["b"] || cfg.Faults.FailTimes != 2 || cfg.Retention != 24*time.Hour {
		t.Errorf("config = %+v", cfg)
	}
	if n := len(cfg.Guard.Options()); n != 3 {
		t.Errorf("%d guard options, want retention, margin, lease", n)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	env := map[string]string{
		"IDEM_MODE":               "sometimes",
		"IDEM_RETENTION":          "a week",
		"IDEM_SAFETY_MARGIN":      "-1s",
		"IDEM_CACHE_SIZE":         "-5",
		"BATCH_CONCURRENCY":       "0",
		"EFFECT_URL":              "ftp://example.com",
		"LOG_LEVEL":               "loud",
		"LOG_BODIES":              "maybe",
		"FAULT_EFFECT_FAIL_TIMES": "x",
		"FAULT_HOOK_URL":          "/relative",
	}
	_, err := LoadConfig(func(k string) string { return env[k] })
	var cerr *envconfig.Error
	if !errors.As(err, &cerr) {
		t.Fatalf("err = %v, want an *envconfig.Error", err)
	}
	vars := cerr.Vars()
	want := []string{"IDEM_TABLE", "LEDGER_TABLE"}
	for k := range env {
		want = append(want, k)
	}
	slices.Sort(want)
	if !slices.Equal(vars, want) {
		t.Errorf("problems with %v\nwant %v", vars, want)
	}
}

func TestLoadConfigConflicts(t *testing.T) {
	tests := map[string]map[string]string{
		"IDEM_LEASE": {"IDEM_LEASE": "1s"}, // not longer than the 2s margin
		"EFFECT_URL": {"IDEM_MODE": "transactional", "EFFECT_URL": "https://example.com/cards"},
	}
	for variable, extra := range tests {
		env := baseEnv()
		for k, v := range extra {
			env[k] = v
		}
		_, err := LoadConfig(func(k string) string { return env[k] })
		var cerr *envconfig.Error
		if !errors.As(err, &cerr) || len(cerr.Problems) != 1 || cerr.Problems[0].Var != variable {
			t.Errorf("%v: err = %v, want one problem with %s", extra, err, variable)
		}
	}
}
