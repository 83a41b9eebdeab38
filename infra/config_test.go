package main

import (
	"strings"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/functions/contract"
)

func TestProfiles(t *testing.T) {
	for name, want := range map[string]string{"": "SqsIdem", "default": "SqsIdem", "test": "SqsIdemTest", "localstack": "SqsIdemLocal", "hardened": "SqsIdem"} {
		cfg, stackName, err := profile(name)
		if err != nil || stackName != want {
			t.Errorf("profile(%q) = stack %q, %v; want %q", name, stackName, err, want)
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("profile %q: %v", name, err)
		}
	}
	if _, _, err := profile("prod"); err == nil || !strings.Contains(err.Error(), "default, test, localstack or hardened") {
		t.Errorf("unknown profile: err = %v", err)
	}
	if got := TestConfig().VisibilityTimeout(); got != 12*time.Second {
		t.Errorf("test profile visibility = %s, want 12s", got)
	}
	if l := LocalStackConfig(); l.VisibilityTimeout() != 24*time.Second || l.SafetyMargin != time.Second || l.MaxReceiveCount != TestConfig().MaxReceiveCount {
		t.Errorf("localstack profile = %+v, want the test profile with a 4 s timeout and a 1 s margin", l)
	}
	h := HardenedConfig()
	if !h.CustomerManagedKey || h.ReservedConcurrency < h.MaxConcurrency || h.ProducerReservedConcurrency <= 0 {
		t.Errorf("hardened profile = %+v, want a customer-managed key and reserved concurrency for both functions", h)
	}
	if d := DefaultConfig(); d.CustomerManagedKey || d.ReservedConcurrency != 0 || d.ProducerReservedConcurrency != 0 {
		t.Errorf("default profile must stay as it was (AWS-managed keys, no reserved concurrency): %+v", d)
	}
}

// TestValidate: the app's own rules; the consumer's are tested in
// exactlyonce, and must be reported through the app's Validate too.
func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantErr string // "" means valid
	}{
		{"default", func(*Config) {}, ""},
		{"consumer rule", func(c *Config) { c.BatchSize = 11 }, "BatchSize must be in 1..10"},
		{"effect url in lease mode", func(c *Config) { c.EffectURL = "https://x.example" }, ""},
		{"effect url http with path", func(c *Config) { c.EffectURL = "http://localhost:8080/issue" }, ""},
		{"effect url relative", func(c *Config) { c.EffectURL = "/issue" }, "is not an absolute http(s) URL"},
		{"effect url no host", func(c *Config) { c.EffectURL = "https:///issue" }, "is not an absolute http(s) URL"},
		{"effect url scheme", func(c *Config) { c.EffectURL = "ftp://x.example" }, "is not an absolute http(s) URL"},
		{"effect url in transactional mode", func(c *Config) { c.Mode, c.EffectURL = contract.ModeTransactional, "https://x.example" }, "EffectURL must be empty"},
		{"producer reserved", func(c *Config) { c.ProducerReservedConcurrency = 3 }, ""},
		{"producer reserved negative", func(c *Config) { c.ProducerReservedConcurrency = -1 }, "ProducerReservedConcurrency"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tt.mutate(&cfg)
			err := cfg.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error = %v, want it to mention %q", err, tt.wantErr)
			}
		})
	}
}
