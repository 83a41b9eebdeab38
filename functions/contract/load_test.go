package contract_test

import (
	"errors"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/functions/internal/envconfig"
)

func getenv(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

// problemVars are the variables err names, or fails the test if err is
// not an *envconfig.Error.
func problemVars(t *testing.T, err error) []string {
	t.Helper()
	var cerr *envconfig.Error
	if !errors.As(err, &cerr) {
		t.Fatalf("err = %v, want an *envconfig.Error", err)
	}
	return cerr.Vars()
}

func consumerEnv() map[string]string {
	return map[string]string{contract.EnvIdemTable: "idem", contract.EnvLedgerTable: "ledger"}
}

func TestLoadConsumerDefaults(t *testing.T) {
	cfg, err := contract.LoadConsumer(getenv(consumerEnv()))
	if err != nil {
		t.Fatal(err)
	}
	want := contract.Consumer{
		Guard: contract.Guard{
			IdemTable: "idem", Namespace: contract.ConsumerNamespace,
			Retention: 168 * time.Hour, SafetyMargin: 2 * time.Second, CacheSize: 1000,
			LogLevel: slog.LevelInfo,
		},
		LedgerTable: "ledger", Mode: contract.ModeLease, Concurrency: 10,
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("config = %+v\nwant %+v", cfg, want)
	}
}

func TestLoadConsumerAll(t *testing.T) {
	env := map[string]string{
		"IDEM_TABLE": "i", "LEDGER_TABLE": "l", "IDEM_NAMESPACE": "gift", "IDEM_MODE": "transactional",
		"IDEM_RETENTION": "24h", "IDEM_SAFETY_MARGIN": "500ms", "IDEM_LEASE": "30s", "IDEM_CACHE_SIZE": "0",
		"BATCH_CONCURRENCY": "3", "LOG_LEVEL": "debug", "LOG_BODIES": "true",
	}
	cfg, err := contract.LoadConsumer(getenv(env))
	if err != nil {
		t.Fatal(err)
	}
	want := contract.Consumer{
		Guard: contract.Guard{
			IdemTable: "i", Namespace: "gift", Retention: 24 * time.Hour, SafetyMargin: 500 * time.Millisecond,
			Lease: 30 * time.Second, LogLevel: slog.LevelDebug,
		},
		LedgerTable: "l", Mode: contract.ModeTransactional, Concurrency: 3, LogBodies: true,
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("config = %+v\nwant %+v", cfg, want)
	}
	if n := len(cfg.Options()); n != 3 {
		t.Errorf("%d guard options, want retention, margin, lease", n)
	}
}

func TestLoadConsumerErrors(t *testing.T) {
	env := map[string]string{
		"IDEM_MODE":          "Transactional", // the names are exact (contract.ValidMode)
		"IDEM_RETENTION":     "a week",
		"IDEM_SAFETY_MARGIN": "-1s",
		"IDEM_CACHE_SIZE":    "-5",
		"BATCH_CONCURRENCY":  "0",
		"EFFECT_URL":         "ftp://example.com",
		"LOG_LEVEL":          "loud",
		"LOG_BODIES":         "maybe",
	}
	_, err := contract.LoadConsumer(getenv(env))
	want := slices.Sorted(maps.Keys(env))
	want = append(want, "IDEM_TABLE", "LEDGER_TABLE")
	slices.Sort(want)
	if got := problemVars(t, err); !slices.Equal(got, want) {
		t.Errorf("problems with %v\nwant %v", got, want)
	}
}

func TestLoadConsumerConflicts(t *testing.T) {
	tests := map[string]map[string]string{
		"IDEM_LEASE": {"IDEM_LEASE": "1s"}, // not longer than the 2s margin
		"EFFECT_URL": {"IDEM_MODE": "transactional", "EFFECT_URL": "https://example.com/cards"},
	}
	for variable, extra := range tests {
		env := consumerEnv()
		maps.Copy(env, extra)
		_, err := contract.LoadConsumer(getenv(env))
		if got := problemVars(t, err); !slices.Equal(got, []string{variable}) {
			t.Errorf("%v: problems with %v, want only %s", extra, got, variable)
		}
	}
}

func TestLoadProducer(t *testing.T) {
	env := map[string]string{"IDEM_TABLE": "idem", "QUEUE_URL": "http://localhost:9324/000000000000/orders"}
	cfg, err := contract.LoadProducer(getenv(env))
	if err != nil {
		t.Fatal(err)
	}
	want := contract.Producer{
		Guard: contract.Guard{
			IdemTable: "idem", Namespace: contract.ProducerNamespace,
			Retention: 168 * time.Hour, SafetyMargin: 2 * time.Second, CacheSize: 1000,
			LogLevel: slog.LevelInfo,
		},
		QueueURL: env["QUEUE_URL"], Concurrency: 50, SendAttempts: 3,
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("config = %+v\nwant %+v", cfg, want)
	}
}

func TestLoadProducerErrors(t *testing.T) {
	env := map[string]string{
		"IDEM_RETENTION":       "forever",
		"IDEM_LEASE":           "0s",
		"PRODUCER_CONCURRENCY": "-1",
		"SEND_ATTEMPTS":        "0",
		"LOG_LEVEL":            "verbose",
	}
	_, err := contract.LoadProducer(getenv(env))
	want := slices.Sorted(maps.Keys(env))
	want = append(want, "IDEM_TABLE", "QUEUE_URL")
	slices.Sort(want)
	if got := problemVars(t, err); !slices.Equal(got, want) {
		t.Errorf("problems with %v\nwant %v", got, want)
	}

	env = map[string]string{"IDEM_TABLE": "t", "QUEUE_URL": "orders"}
	_, err = contract.LoadProducer(getenv(env))
	if got := problemVars(t, err); !slices.Equal(got, []string{"QUEUE_URL"}) {
		t.Errorf("relative queue URL: problems with %v", got)
	}
}

// TestLoadersReadTheContract: the loaders read the variables this package
// names and no others, so that what the stack may set is listed here.
func TestLoadersReadTheContract(t *testing.T) {
	both := []string{
		contract.EnvIdemTable, contract.EnvNamespace, contract.EnvRetention, contract.EnvSafetyMargin,
		contract.EnvLease, contract.EnvCacheSize, contract.EnvLogLevel,
	}
	tests := []struct {
		name string
		load func(func(string) string) error
		own  []string
	}{
		{"consumer", func(g func(string) string) error { _, err := contract.LoadConsumer(g); return err },
			[]string{contract.EnvLedgerTable, contract.EnvMode, contract.EnvBatchConcurrency, contract.EnvLogBodies, contract.EnvEffectURL}},
		{"producer", func(g func(string) string) error { _, err := contract.LoadProducer(g); return err },
			[]string{contract.EnvQueueURL, contract.EnvProducerConcurrency, contract.EnvSendAttempts}},
	}
	for _, tt := range tests {
		read := map[string]bool{}
		_ = tt.load(func(k string) string { read[k] = true; return "" })
		want := slices.Sorted(slices.Values(append(slices.Clone(both), tt.own...)))
		if got := slices.Sorted(maps.Keys(read)); !slices.Equal(got, want) {
			t.Errorf("%s reads %v\nwant %v", tt.name, got, want)
		}
	}
}
