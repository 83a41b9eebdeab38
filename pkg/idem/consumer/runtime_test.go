package consumer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// offline keeps the SDK from reading this machine's AWS configuration.
func offline(t *testing.T) {
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	t.Setenv("AWS_REGION", "eu-west-1")
}

func leaseSetup(table *string) Setup {
	return func(_ context.Context, rt *Runtime) (Effect, error) {
		*table = rt.Env.Required("POINTS_TABLE")
		return Effect{Lease: func(context.Context, string, events.SQSMessage) ([]byte, error) { return nil, nil }}, nil
	}
}

// TestBuildNamesEveryProblem: the runtime's problems and the effect's own,
// in one error, before anything is built.
func TestBuildNamesEveryProblem(t *testing.T) {
	offline(t)
	var table string
	env := map[string]string{EnvMode: ModeTransactional, EnvRetention: "forever"}
	_, err := build(t.Context(), leaseSetup(&table), getenv(env))
	want := []string{EnvKey, EnvMode, EnvRetention, EnvTable, "POINTS_TABLE"}
	if got := problemVars(t, err); !slices.Equal(got, want) {
		t.Errorf("problems with %v, want %v\n%v", got, want, err)
	}
}

func TestBuildSetupError(t *testing.T) {
	offline(t)
	boom := errors.New("boom")
	setup := func(context.Context, *Runtime) (Effect, error) { return Effect{}, boom }
	_, err := build(t.Context(), setup, getenv(map[string]string{EnvTable: "receipts", EnvKey: "k"}))
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want the setup's", err)
	}
}

func TestBuild(t *testing.T) {
	offline(t)
	var table string
	h, err := build(t.Context(), leaseSetup(&table), getenv(map[string]string{EnvTable: "receipts", EnvKey: "k", "POINTS_TABLE": "points"}))
	if err != nil || h == nil || table != "points" {
		t.Fatalf("build: %v, %v; the effect read %q", h, err, table)
	}
}

func TestStoreChoice(t *testing.T) {
	offline(t)
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{EnvTable: "receipts"}, "*dynamostore.Store"},
		{map[string]string{EnvStore: StoreRedis, EnvRedisURL: "redis://127.0.0.1:1/0"}, "*redisstore.Store"},
	} {
		cfg, err := Load(getenv(tt.env))
		if err != nil {
			t.Fatal(err)
		}
		store, err := newStore(cfg, nil)
		if err != nil || fmt.Sprintf("%T", store) != tt.want {
			t.Errorf("%v: store %T, %v; want a %s", tt.env, store, err, tt.want)
		}
	}
}
