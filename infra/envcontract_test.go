package main

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/sqsidem/functions/consumer/effect"
	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/infra/exactlyonce/cdktest"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// TestEnvironmentContract links the stack to the functions. For each
// profile it synthesizes the stack and starts each function's configuration
// from the environment the template gives it, references resolved to dummy
// values: the consumer's with the runtime's loader (consumer.Load) and the
// effect's Setup, reading with one Env as consumer.Start does; the
// producer's with contract.LoadProducer. It fails when
//
//   - a function refuses its environment: a required variable is not set,
//     or a value is bad;
//   - the stack sets a variable nobody reads: a name misspelt or renamed on
//     either side, which would be ignored and replaced by a default;
//   - a function does not end up with the value the stack's Config means:
//     a variable the stack forgot to set, so the function reads its
//     default.
func TestEnvironmentContract(t *testing.T) {
	cases := map[string]Config{}
	for _, name := range Profiles() {
		cfg, _, err := profile(name)
		if err != nil {
			t.Fatal(err)
		}
		cases[name] = deployed(cfg)
	}
	// What only some configurations set: the other mode (with the suite's
	// settings of that mode, as -c mode= gives them), the other
	// unknown-outcome policy, the effect's settings.
	other := TestConfig()
	other.Mode = consumer.ModeTransactional
	if Mode == consumer.ModeTransactional {
		other.Mode = consumer.ModeLease
	}
	other.UnknownOutcome = unknownOutcomeIn(other.Mode)
	other.Effect = suiteEffect(contract.EffectSettings, other.Mode)
	cases["other mode"] = deployed(other)
	// Both policies of lease mode, whichever the app's is.
	for _, policy := range consumer.UnknownOutcomes() {
		if c := TestConfig(); c.Mode == consumer.ModeLease {
			c.UnknownOutcome = policy
			cases[policy] = c
		}
	}
	settings := deployed(DefaultConfig())
	for _, s := range contract.EffectSettings {
		if v := "https://effect.example/" + s.Env; (s.Valid == nil || s.Valid(v)) && (s.Modes == nil || slices.Contains(s.Modes, settings.Mode)) {
			settings.Effect[s.Env] = v
		}
	}
	cases["effect settings"] = settings

	for _, name := range slices.Sorted(maps.Keys(cases)) {
		cfg := cases[name]
		t.Run(name, func(t *testing.T) {
			tpl := cdktest.Synth(t, newTestStack(cfg))
			if fns := tpl.ByType("AWS::Lambda::Function"); len(fns) != 2 {
				t.Fatalf("%d functions, want the consumer and the producer: give a new function its loader here", len(fns))
			}
			receipts := logicalID(t, tpl, "AWS::DynamoDB::Table", "IdempotencyTable")
			queue := logicalID(t, tpl, "AWS::SQS::Queue", "Queue")
			c := cfg.Config.WithDefaults()

			env := functionEnv(t, tpl, "Consumer")
			got := loadFrom(t, "consumer", env, func(getenv func(string) string) (consumer.Config, error) {
				cfg, err := consumer.Load(getenv)
				e := consumer.NewEnv(getenv)
				_, serr := effect.Setup(t.Context(), &consumer.Runtime{Config: cfg, DynamoDB: &dynamodb.Client{}, Env: e})
				return cfg, errors.Join(err, serr, e.Err("effect"))
			})
			want := consumer.Config{
				GuardConfig: consumer.GuardConfig{
					Namespace: c.Namespace, Retention: c.ReceiptRetention, SafetyMargin: c.SafetyMargin,
					CacheSize: consumer.DefaultCacheSize,
				},
				Store: consumer.StoreDynamoDB, Table: resolved(receipts), Mode: c.Mode, Key: c.Key,
				BatchConcurrency: c.BatchSize, MaxReceiveCount: c.MaxReceiveCount, UnknownOutcome: c.UnknownOutcome,
				VisibilityTimeout: c.VisibilityTimeout(),
				LogLevel:          slog.LevelInfo,
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("the consumer loads\n%+v\nwant\n%+v", got, want)
			}
			for _, tb := range contract.EffectTables {
				if id := logicalID(t, tpl, "AWS::DynamoDB::Table", tableID(tb.Env)); env[tb.Env] != resolved(id) {
					t.Errorf("%s = %q, want the table %s", tb.Env, env[tb.Env], id)
				}
			}
			for name, v := range cfg.Effect {
				if env[name] != v {
					t.Errorf("%s = %q, want %q", name, env[name], v)
				}
			}

			producer := loadFrom(t, "producer", functionEnv(t, tpl, "Producer"), contract.LoadProducer)
			wantProducer := contract.ProducerConfig{
				GuardConfig: consumer.GuardConfig{
					Namespace: contract.ProducerNamespace, Retention: c.ReceiptRetention, SafetyMargin: c.SafetyMargin,
					CacheSize: consumer.DefaultCacheSize,
				},
				Table: resolved(receipts), QueueURL: resolvedQueueURL(queue),
				Concurrency: contract.DefaultProducerConcurrency, SendAttempts: contract.DefaultSendAttempts, LogLevel: slog.LevelInfo,
			}
			if !reflect.DeepEqual(producer, wantProducer) {
				t.Errorf("the producer loads\n%+v\nwant\n%+v", producer, wantProducer)
			}
		})
	}
}

// loadFrom runs load, a function's loader, on env, and checks that it
// accepts env and reads every variable of it.
func loadFrom[C any](t *testing.T, function string, env map[string]string, load func(getenv func(string) string) (C, error)) C {
	t.Helper()
	read := map[string]bool{}
	cfg, err := load(func(k string) string {
		read[k] = true
		return env[k]
	})
	if err != nil {
		t.Errorf("the %s refuses the stack's environment: %v", function, err)
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if !read[k] {
			t.Errorf("the stack sets %s=%q on the %s, which does not read it", k, env[k], function)
		}
	}
	return cfg
}

// functionEnv is the environment of the one function whose logical id has
// prefix, with references resolved.
func functionEnv(t *testing.T, tpl cdktest.Template, prefix string) map[string]string {
	t.Helper()
	env := map[string]string{}
	for k, v := range cdktest.Env(tpl.One(t, "AWS::Lambda::Function", prefix)) {
		env[k] = resolve(t, tpl, v)
	}
	return env
}

// resolve is what CloudFormation would make of v, with dummy values for
// the references (see resolvedRef). Other intrinsic functions fail the
// test: teach it them when the stack starts using them.
func resolve(t *testing.T, tpl cdktest.Template, v any) string {
	t.Helper()
	switch v := v.(type) {
	case string:
		return v
	case map[string]any:
		if id, ok := v["Ref"].(string); ok && len(v) == 1 {
			return resolvedRef(t, tpl, id, "")
		}
		if att, ok := v["Fn::GetAtt"].([]any); ok && len(v) == 1 && len(att) == 2 {
			return resolvedRef(t, tpl, fmt.Sprint(att[0]), fmt.Sprint(att[1]))
		}
	}
	t.Fatalf("cannot resolve the environment value %s", cdktest.JSON(v))
	return ""
}

// resolvedRef is the dummy value of a Ref to resource id (attribute "") or
// of a GetAtt of its attribute: "resolved-<id>", with ".<attribute>" for a
// GetAtt, except for a queue's Ref and QueueUrl, which are its URL.
func resolvedRef(t *testing.T, tpl cdktest.Template, id, attribute string) string {
	t.Helper()
	r, ok := tpl.Resources[id]
	switch {
	case !ok:
		t.Fatalf("reference to %s, which is not a resource of the template", id)
	case r.Type == "AWS::SQS::Queue" && (attribute == "" || attribute == "QueueUrl"):
		return resolvedQueueURL(id)
	case attribute != "":
		return resolved(id) + "." + attribute
	}
	return resolved(id)
}

func resolved(id string) string { return "resolved-" + id }

func resolvedQueueURL(id string) string {
	return "https://sqs.eu-west-1.amazonaws.com/123456789012/" + resolved(id)
}

// logicalID is the logical id of the one resource of a type whose logical
// id has prefix.
func logicalID(t *testing.T, tpl cdktest.Template, typ, prefix string) string {
	t.Helper()
	var found []string
	for id := range tpl.ByType(typ) {
		if strings.HasPrefix(id, prefix) {
			found = append(found, id)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one %s with logical id prefix %q, got %v", typ, prefix, found)
	}
	return found[0]
}
