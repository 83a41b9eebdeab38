package consumer

import (
	"errors"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"
)

func getenv(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

// problemVars are the variables err names; it fails the test if err is not
// a *ConfigError.
func problemVars(t *testing.T, err error) []string {
	t.Helper()
	var cerr *ConfigError
	if !errors.As(err, &cerr) {
		t.Fatalf("err = %v, want a *ConfigError", err)
	}
	return cerr.Vars()
}

func TestLoadDefaults(t *testing.T) {
	cfg, err := Load(getenv(map[string]string{EnvTable: "receipts"}))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		GuardConfig: GuardConfig{
			Namespace: DefaultNamespace, Retention: 168 * time.Hour, SafetyMargin: 3 * time.Second, CacheSize: 1000,
		},
		Store: StoreDynamoDB, Table: "receipts", Mode: ModeLease, BatchConcurrency: 10, UnknownOutcome: UnknownRetry,
		LogLevel: slog.LevelInfo,
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("config = %+v\nwant %+v", cfg, want)
	}
	if n := len(cfg.Options()); n != 3 {
		t.Errorf("%d guard options, want retention, margin, cache", n)
	}
}

func TestLoadAll(t *testing.T) {
	env := map[string]string{
		EnvStore: "redis", EnvRedisURL: "redis://localhost:6379/0", EnvTable: "unused", EnvNamespace: "gift",
		EnvMode: ModeLease, EnvKey: "orderId", EnvRetention: "24h", EnvSafetyMargin: "500ms", EnvLease: "30s",
		EnvCacheSize: "0", EnvBatchConcurrency: "3", EnvMaxReceiveCount: "5", EnvVisibilityTimeout: "3m", EnvUnknownOutcome: "hold",
		EnvLogLevel: "debug", EnvLogBodies: "true",
	}
	cfg, err := Load(getenv(env))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		GuardConfig: GuardConfig{Namespace: "gift", Retention: 24 * time.Hour, SafetyMargin: 500 * time.Millisecond, Lease: 30 * time.Second},
		Store:       StoreRedis, Table: "unused", RedisURL: "redis://localhost:6379/0", Mode: ModeLease, Key: "orderId",
		BatchConcurrency: 3, MaxReceiveCount: 5, VisibilityTimeout: 3 * time.Minute, UnknownOutcome: UnknownHold,
		LogLevel: slog.LevelDebug, LogBodies: true,
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("config = %+v\nwant %+v", cfg, want)
	}
}

// TestLoadNamesEveryProblem: one error names every bad variable.
func TestLoadNamesEveryProblem(t *testing.T) {
	env := map[string]string{
		EnvStore:             "dynamo",
		EnvMode:              "Transactional", // the names are exact
		EnvRetention:         "a week",
		EnvSafetyMargin:      "-1s",
		EnvCacheSize:         "-5",
		EnvBatchConcurrency:  "0",
		EnvMaxReceiveCount:   "many",
		EnvVisibilityTimeout: "13h", // over SQS's 12 hours
		EnvUnknownOutcome:    "wait",
		EnvLogLevel:          "loud",
		EnvLogBodies:         "maybe",
	}
	_, err := Load(getenv(env))
	want := append(slices.Collect(maps.Keys(env)), EnvTable) // the default store needs a table
	slices.Sort(want)
	if got := problemVars(t, err); !slices.Equal(got, want) {
		t.Errorf("problems with %v\nwant %v", got, want)
	}
}

func TestLoadConflicts(t *testing.T) {
	tests := map[string]map[string]string{
		EnvLease:    {EnvTable: "t", EnvLease: "2s"}, // not longer than the 3 s margin
		EnvRedisURL: {EnvStore: StoreRedis, EnvRedisURL: "http://localhost:6379"},
		EnvMode:     {EnvStore: StoreRedis, EnvRedisURL: "redis://localhost", EnvMode: ModeTransactional},
	}
	for variable, env := range tests {
		_, err := Load(getenv(env))
		if got := problemVars(t, err); !slices.Equal(got, []string{variable}) {
			t.Errorf("%v: problems with %v, want only %s", env, got, variable)
		}
	}
}

// TestLoadReadsVariables: Load reads the variables Variables lists and no
// others, so the construct's agreement test can trust the list.
func TestLoadReadsVariables(t *testing.T) {
	read := map[string]bool{}
	_, _ = Load(func(k string) string { read[k] = true; return "" })
	if got, want := slices.Sorted(maps.Keys(read)), slices.Sorted(slices.Values(Variables())); !slices.Equal(got, want) {
		t.Errorf("Load reads %v\nVariables lists %v", got, want)
	}
}

func TestNamesUnique(t *testing.T) {
	for what, names := range map[string][]string{"variables": Variables(), "metrics": Metrics(), "modes": Modes()} {
		seen := map[string]bool{}
		for _, n := range names {
			if n == "" || seen[n] {
				t.Errorf("%s: %q empty or listed twice", what, n)
			}
			seen[n] = true
		}
	}
}

// TestDeprecatedGuard: ReadGuard, the name before v0.3.0, reads what
// ReadGuardConfig reads, into the same type. Remove in v0.4.0.
func TestDeprecatedGuard(t *testing.T) {
	env := getenv(map[string]string{EnvNamespace: "gift", EnvLease: "30s"})
	var old Guard = ReadGuard(NewEnv(env), DefaultNamespace)
	if want := ReadGuardConfig(NewEnv(env), DefaultNamespace); old != want {
		t.Errorf("ReadGuard = %+v, ReadGuardConfig = %+v", old, want)
	}
}
