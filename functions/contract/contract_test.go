package contract_test

import (
	"errors"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

func getenv(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

func problemVars(t *testing.T, err error) []string {
	t.Helper()
	var cerr *consumer.ConfigError
	if !errors.As(err, &cerr) {
		t.Fatalf("err = %v, want a *consumer.ConfigError", err)
	}
	return cerr.Vars()
}

func TestLoadProducer(t *testing.T) {
	env := map[string]string{consumer.EnvTable: "idem", contract.EnvQueueURL: "http://localhost:9324/000000000000/orders"}
	cfg, err := contract.LoadProducer(getenv(env))
	if err != nil {
		t.Fatal(err)
	}
	want := contract.ProducerConfig{
		GuardConfig: consumer.GuardConfig{
			Namespace: contract.ProducerNamespace, Retention: consumer.DefaultRetention,
			SafetyMargin: consumer.DefaultSafetyMargin, CacheSize: consumer.DefaultCacheSize,
		},
		Table: "idem", QueueURL: env[contract.EnvQueueURL], Concurrency: 50, SendAttempts: 3, LogLevel: slog.LevelInfo,
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("config = %+v\nwant %+v", cfg, want)
	}
}

func TestLoadProducerNamesEveryProblem(t *testing.T) {
	env := map[string]string{
		consumer.EnvRetention:           "forever",
		consumer.EnvLease:               "1s", // not longer than the margin
		contract.EnvProducerConcurrency: "-1",
		contract.EnvSendAttempts:        "0",
		consumer.EnvLogLevel:            "verbose",
	}
	_, err := contract.LoadProducer(getenv(env))
	want := append(slices.Collect(maps.Keys(env)), consumer.EnvTable, contract.EnvQueueURL)
	slices.Sort(want)
	if got := problemVars(t, err); !slices.Equal(got, want) {
		t.Errorf("problems with %v\nwant %v", got, want)
	}
	_, err = contract.LoadProducer(getenv(map[string]string{consumer.EnvTable: "t", contract.EnvQueueURL: "orders"}))
	if got := problemVars(t, err); !slices.Equal(got, []string{contract.EnvQueueURL}) {
		t.Errorf("relative queue URL: problems with %v", got)
	}
}

// TestNamespacesDiffer: see ProducerNamespace.
func TestNamespacesDiffer(t *testing.T) {
	if contract.ProducerNamespace == "" || contract.ProducerNamespace == consumer.DefaultNamespace {
		t.Fatalf("the producer's namespace %q must be non-empty and differ from the consumer's", contract.ProducerNamespace)
	}
}

// TestDeclarations: what the stack builds from is well formed.
func TestDeclarations(t *testing.T) {
	if contract.KeyField == "" {
		t.Error("no key field")
	}
	seen := map[string]bool{}
	for _, tb := range contract.EffectTables {
		if tb.Env == "" || tb.PartitionKey == "" || len(tb.Actions) == 0 || seen[tb.Env] {
			t.Errorf("table %+v: want a new variable, a partition key and actions", tb)
		}
		seen[tb.Env] = true
		for _, a := range tb.Actions {
			if !strings.HasPrefix(a, "dynamodb:") || strings.Contains(a, "*") {
				t.Errorf("table %s: action %q, want a DynamoDB action without wildcards", tb.Env, a)
			}
		}
	}
	for _, s := range contract.EffectSettings {
		if s.Env == "" || s.Context == "" || seen[s.Env] || slices.Contains(consumer.Variables(), s.Env) {
			t.Errorf("setting %+v: want a variable of its own and a context key", s)
		}
		seen[s.Env] = true
		for _, m := range s.Modes {
			if !slices.Contains(consumer.Modes(), m) {
				t.Errorf("setting %s: mode %q", s.Env, m)
			}
		}
		if s.Required && s.Example == "" {
			t.Errorf("setting %s is required: give it an Example, which the error asking for it shows", s.Env)
		}
		// The app checks both as it checks a value given on the command line.
		for what, v := range map[string]string{"Example": s.Example, "Suite": s.Suite} {
			if v != "" && s.Valid != nil && !s.Valid(v) {
				t.Errorf("setting %s: %s %q is not valid", s.Env, what, v)
			}
		}
	}
}
