package main

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// suiteURL is the made-up settings' suite value.
const suiteURL = "http://127.0.0.1:4599/cards"

// deployed is cfg as cdk deploy -c gives it: each effect setting required
// in its mode that it lacks set to the setting's Example.
func deployed(cfg Config) Config {
	cfg.Effect = maps.Clone(cfg.Effect)
	for _, s := range requiredIn(contract.EffectSettings, cfg.Mode) {
		if cfg.Effect[s.Env] == "" {
			cfg.Effect[s.Env] = s.Example
		}
	}
	return cfg
}

// requiredIn are the settings required in mode.
func requiredIn(settings []contract.Setting, mode string) []contract.Setting {
	var out []contract.Setting
	for _, s := range settings {
		if s.Required && s.AllowedIn(mode) {
			out = append(out, s)
		}
	}
	return out
}

func TestProfiles(t *testing.T) {
	want := map[string]string{"": StackName, "default": StackName, "test": StackName + "Test", "localstack": StackName + "Local", "hardened": StackName}
	suite := map[string]bool{"test": true, "localstack": true}
	for _, name := range append(Profiles(), "") {
		cfg, stackName, err := profile(name)
		if err != nil || stackName != want[name] {
			t.Errorf("profile(%q) = stack %q, %v; want %q", name, stackName, err, want[name])
		}
		if err := deployed(cfg).Validate(); err != nil {
			t.Errorf("profile %q: %v", name, err)
		}
		// The test profiles synthesize as they are, with the suite's
		// settings; the others leave the effect's to the deployment.
		if want := suiteEffect(contract.EffectSettings, cfg.Mode); suite[name] && !maps.Equal(cfg.Effect, want) {
			t.Errorf("profile %q: effect settings %v, want the suite's %v", name, cfg.Effect, want)
		}
		if !suite[name] && len(cfg.Effect) != 0 {
			t.Errorf("profile %q sets effect settings %v, which are the deployment's", name, cfg.Effect)
		}
		err = cfg.Validate()
		if required := requiredIn(contract.EffectSettings, cfg.Mode); suite[name] || len(required) == 0 {
			if err != nil {
				t.Errorf("profile %q as it is: %v", name, err)
			}
		} else if err == nil || !strings.Contains(err.Error(), required[0].Context+" is required in "+cfg.Mode+" mode") {
			t.Errorf("profile %q without %s: err = %v, want it refused", name, required[0].Context, err)
		}
		// Every profile states the app's mode and policy; none inherits
		// the construct's default.
		if cfg.Mode != Mode || cfg.UnknownOutcome != unknownOutcomeIn(Mode) || cfg.Namespace != Namespace || cfg.Key != contract.KeyField {
			t.Errorf("profile %q: mode %q, unknown outcome %q, namespace %q, key %q; want the app's", name, cfg.Mode, cfg.UnknownOutcome, cfg.Namespace, cfg.Key)
		}
	}
	if _, _, err := profile("prod"); err == nil || !strings.Contains(err.Error(), "unknown profile") {
		t.Errorf("unknown profile: err = %v", err)
	}
	if err := base().Validate(); err == nil || !strings.Contains(err.Error(), "Mode") {
		t.Errorf("a profile without a mode: err = %v, want it refused", err)
	}
	// The policy is lease mode's: transactional mode takes the
	// construct's default, whatever the app's policy.
	for mode, want := range map[string]string{consumer.ModeLease: UnknownOutcome, consumer.ModeTransactional: consumer.DefaultUnknownOutcome} {
		if got := unknownOutcomeIn(mode); got != want {
			t.Errorf("unknownOutcomeIn(%s) = %q, want %q", mode, got, want)
		}
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
		{"hold", func(c *Config) { c.Mode, c.UnknownOutcome = consumer.ModeLease, consumer.UnknownHold }, ""},
		{"hold, transactional", func(c *Config) {
			c.Mode, c.UnknownOutcome, c.Effect = consumer.ModeTransactional, consumer.UnknownHold, nil
		}, `UnknownOutcome "hold" has no effect in transactional mode`},
		{"unknown effect setting", func(c *Config) { c.Effect["NOT_A_SETTING"] = "x" }, "not one of the effect's settings"},
		{"producer reserved", func(c *Config) { c.ProducerReservedConcurrency = 3 }, ""},
		{"producer reserved negative", func(c *Config) { c.ProducerReservedConcurrency = -1 }, "ProducerReservedConcurrency"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := deployed(DefaultConfig())
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
			cfg.Mode, cfg.UnknownOutcome = mode, unknownOutcomeIn(mode)
			cfg = deployed(cfg)
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

// TestCheckEffect: the rules of the effect's settings, on settings of
// every kind, whatever the template's effect declares: a partner URL
// required in lease mode (as a remote effect's is), and a setting
// required in every mode.
func TestCheckEffect(t *testing.T) {
	partner := contract.Setting{
		Env: "EFFECT_URL", Context: "effectUrl", Valid: consumer.IsHTTPURL, Modes: []string{consumer.ModeLease},
		Required: true, Example: "https://partner.example/cards", Suite: suiteURL,
	}
	region := contract.Setting{Env: "REGION", Context: "region", Required: true}
	settings := []contract.Setting{partner, region}
	tests := []struct {
		name   string
		mode   string
		effect map[string]string
		want   []string // the errors, in order
	}{
		{"lease, given", consumer.ModeLease, map[string]string{"EFFECT_URL": "https://cards.example", "REGION": "eu"}, nil},
		{"lease, missing", consumer.ModeLease, map[string]string{"REGION": "eu"},
			[]string{"effectUrl is required in lease mode: cdk deploy -c effectUrl=https://partner.example/cards"}},
		{"lease, empty", consumer.ModeLease, map[string]string{"EFFECT_URL": "", "REGION": "eu"},
			[]string{`Effect: EFFECT_URL="" is not valid`, "effectUrl is required in lease mode"}},
		{"lease, the suite's", consumer.ModeLease, map[string]string{"EFFECT_URL": suiteURL, "REGION": "eu"}, nil},
		{"lease, invalid", consumer.ModeLease, map[string]string{"EFFECT_URL": "cards.example", "REGION": "eu"},
			[]string{`Effect: EFFECT_URL="cards.example" is not valid`}},
		// Required only where it may be set.
		{"transactional, missing", consumer.ModeTransactional, map[string]string{"REGION": "eu"}, nil},
		{"transactional, given", consumer.ModeTransactional, map[string]string{"EFFECT_URL": "https://cards.example", "REGION": "eu"},
			[]string{"Effect: EFFECT_URL may only be set in [lease] mode, not transactional"}},
		{"no example", consumer.ModeTransactional, nil, []string{"region is required in transactional mode: cdk deploy -c region=<value>"}},
		{"not a setting", consumer.ModeTransactional, map[string]string{"REGION": "eu", "OTHER": "x"},
			[]string{"Effect sets OTHER, which is not one of the effect's settings"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := checkEffect(settings, tt.mode, tt.effect)
			if len(errs) != len(tt.want) {
				t.Fatalf("errors %v, want %d: %q", errs, len(tt.want), tt.want)
			}
			for i, err := range errs {
				if !strings.Contains(err.Error(), tt.want[i]) {
					t.Errorf("error %d = %q, want it to mention %q", i, err, tt.want[i])
				}
			}
		})
	}

	for mode, want := range map[string]map[string]string{
		consumer.ModeLease:         {"EFFECT_URL": suiteURL},
		consumer.ModeTransactional: {},
	} {
		if got := suiteEffect(settings, mode); !maps.Equal(got, want) {
			t.Errorf("suiteEffect in %s mode = %v, want %v", mode, got, want)
		}
	}
}
