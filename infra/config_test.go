package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

func TestProfiles(t *testing.T) {
	want := map[string]string{"": StackName, "default": StackName, "test": StackName + "Test", "localstack": StackName + "Local", "hardened": StackName}
	for _, name := range append(Profiles(), "") {
		cfg, stackName, err := profile(name)
		if err != nil || stackName != want[name] {
			t.Errorf("profile(%q) = stack %q, %v; want %q", name, stackName, err, want[name])
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("profile %q: %v", name, err)
		}
		// Every profile states the app's mode; none inherits the
		// construct's default.
		if cfg.Mode != Mode || cfg.Namespace != Namespace || cfg.Key != contract.KeyField {
			t.Errorf("profile %q: mode %q, namespace %q, key %q; want the app's", name, cfg.Mode, cfg.Namespace, cfg.Key)
		}
	}
	if _, _, err := profile("prod"); err == nil || !strings.Contains(err.Error(), "unknown profile") {
		t.Errorf("unknown profile: err = %v", err)
	}
	if err := base().Validate(); err == nil || !strings.Contains(err.Error(), "Mode") {
		t.Errorf("a profile without a mode: err = %v, want it refused", err)
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
		{"unknown effect setting", func(c *Config) { c.Effect["NOT_A_SETTING"] = "x" }, "not one of the effect's settings"},
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

// TestEffectSettings: each of the effect's settings (contract.EffectSettings)
// is refused in a mode it does not allow and with a value it finds invalid.
func TestEffectSettings(t *testing.T) {
	for _, s := range contract.EffectSettings {
		for _, mode := range consumer.Modes() {
			cfg := DefaultConfig()
			cfg.Mode = mode
			cfg.Effect[s.Env] = "::not a value::"
			err := cfg.Validate()
			allowed := s.Modes == nil || slices.Contains(s.Modes, mode)
			valid := s.Valid == nil || s.Valid(cfg.Effect[s.Env])
			if (err == nil) != (allowed && valid) {
				t.Errorf("%s=%q in %s mode: err = %v; allowed in the mode %v, valid %v", s.Env, cfg.Effect[s.Env], mode, err, allowed, valid)
			}
		}
	}
}
