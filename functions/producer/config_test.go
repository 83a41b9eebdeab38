package main

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/functions/internal/envconfig"
)

func TestLoadConfig(t *testing.T) {
	env := map[string]string{
		"IDEM_TABLE": "idem", "QUEUE_URL": "http://localhost:9324/000000000000/orders",
		"FAULT_FAIL_SEND_KEYS": "a,b", "FAULT_FAIL_POST_SEND_UPDATE": "1",
	}
	cfg, err := LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Namespace != "producer" || cfg.Concurrency != 50 || cfg.SendAttempts != 3 ||
		cfg.Retention != 168*time.Hour || cfg.Lease != 0 || cfg.CacheSize != 1000 {
		t.Errorf("defaults: %+v", cfg)
	}
	if !slices.Equal(cfg.Faults.FailSendKeys, []string{"a", "b"}) || !cfg.Faults.FailPostSendUpdate || cfg.Faults.FailSend {
		t.Errorf("faults: %+v", cfg.Faults)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	env := map[string]string{
		"IDEM_RETENTION":       "forever",
		"IDEM_LEASE":           "0s",
		"PRODUCER_CONCURRENCY": "-1",
		"SEND_ATTEMPTS":        "0",
		"LOG_LEVEL":            "verbose",
		"FAULT_FAIL_SEND":      "sometimes",
	}
	_, err := LoadConfig(func(k string) string { return env[k] })
	var cerr *envconfig.Error
	if !errors.As(err, &cerr) {
		t.Fatalf("err = %v, want an *envconfig.Error", err)
	}
	vars := cerr.Vars()
	want := []string{"IDEM_TABLE", "QUEUE_URL"}
	for k := range env {
		want = append(want, k)
	}
	slices.Sort(want)
	if !slices.Equal(vars, want) {
		t.Errorf("problems with %v\nwant %v", vars, want)
	}

	env = map[string]string{"IDEM_TABLE": "t", "QUEUE_URL": "orders"}
	if _, err := LoadConfig(func(k string) string { return env[k] }); !errors.As(err, &cerr) || cerr.Problems[0].Var != "QUEUE_URL" {
		t.Errorf("relative queue URL: err = %v", err)
	}
}
