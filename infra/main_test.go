package main

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// TestConfigure: what the context (cdk.json, -c key=value) selects.
func TestConfigure(t *testing.T) {
	otherMode := consumer.ModeTransactional
	if Mode == otherMode {
		otherMode = consumer.ModeLease
	}
	tests := []struct {
		name    string
		context map[string]string
		check   func(t *testing.T, cfg Config, stack string)
		wantErr string // "" means valid
	}{
		{"test profile", map[string]string{"profile": "test"}, func(t *testing.T, cfg Config, stack string) {
			if stack != StackName+"Test" || cfg.UnknownOutcome != unknownOutcomeIn(Mode) {
				t.Errorf("stack %q, unknown outcome %q; want the app's %q", stack, cfg.UnknownOutcome, unknownOutcomeIn(Mode))
			}
			wantSuite(t, cfg)
		}, ""},
		{"localstack profile", map[string]string{"profile": "localstack"}, func(t *testing.T, cfg Config, _ string) { wantSuite(t, cfg) }, ""},
		// The suite's settings follow the mode: none is refused in a
		// mode it may not be set in.
		{"test profile, other mode", map[string]string{"profile": "test", "mode": otherMode}, func(t *testing.T, cfg Config, _ string) {
			// The policy follows the mode too: the app's in lease mode,
			// none in transactional mode (which refuses hold).
			if cfg.Mode != otherMode || cfg.UnknownOutcome != unknownOutcomeIn(otherMode) {
				t.Errorf("mode %q, unknown outcome %q; want %q, %q", cfg.Mode, cfg.UnknownOutcome, otherMode, unknownOutcomeIn(otherMode))
			}
			wantSuite(t, cfg)
		}, ""},
		{"hold", map[string]string{"profile": "test", "mode": consumer.ModeLease, "unknownOutcome": consumer.UnknownHold}, func(t *testing.T, cfg Config, _ string) {
			if cfg.UnknownOutcome != consumer.UnknownHold {
				t.Errorf("unknown outcome %q, want hold", cfg.UnknownOutcome)
			}
		}, ""},
		{"retry", map[string]string{"profile": "test", "unknownOutcome": consumer.UnknownRetry}, nil, ""},
		{"hold, transactional", map[string]string{"profile": "test", "mode": consumer.ModeTransactional, "unknownOutcome": consumer.UnknownHold},
			nil, `UnknownOutcome "hold" has no effect in transactional mode`},
		{"unknown outcome misspelt", map[string]string{"profile": "test", "unknownOutcome": "park"}, nil, `UnknownOutcome must be one of [retry hold], got "park"`},
		{"stack name and timeout", map[string]string{"profile": "test", "stackName": "Mine", "functionTimeout": "5s"}, func(t *testing.T, cfg Config, stack string) {
			if stack != "Mine" || cfg.FunctionTimeout != 5*time.Second {
				t.Errorf("stack %q, timeout %s", stack, cfg.FunctionTimeout)
			}
		}, ""},
		{"bad timeout", map[string]string{"functionTimeout": "soon"}, nil, "context functionTimeout"},
		{"unknown profile", map[string]string{"profile": "prod"}, nil, "unknown profile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, stack, err := configure(func(k string) string { return tt.context[k] })
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error = %v, want it to mention %q", err, tt.wantErr)
			}
			if tt.check != nil {
				tt.check(t, cfg, stack)
			}
		})
	}
}

// wantSuite: cfg's effect settings are the suite's in its mode.
func wantSuite(t *testing.T, cfg Config) {
	t.Helper()
	if want := suiteEffect(contract.EffectSettings, cfg.Mode); !maps.Equal(cfg.Effect, want) {
		t.Errorf("effect settings %v in %s mode, want the suite's %v", cfg.Effect, cfg.Mode, want)
	}
	for _, s := range contract.EffectSettings {
		if s.Suite != "" && s.AllowedIn(cfg.Mode) && cfg.Effect[s.Env] != s.Suite {
			t.Errorf("%s = %q, want the suite's %q", s.Env, cfg.Effect[s.Env], s.Suite)
		}
	}
}

// TestConfigureRequiredSettings: the production profiles refuse to
// synthesize without a setting required in their mode, naming the context
// key to give; given, they synthesize. Effect settings given in the
// context override the test profiles' too.
func TestConfigureRequiredSettings(t *testing.T) {
	for _, name := range []string{"default", "hardened"} {
		required := requiredIn(contract.EffectSettings, Mode)
		_, _, err := configure(func(k string) string { return map[string]string{"profile": name}[k] })
		if len(required) == 0 {
			if err != nil {
				t.Errorf("profile %s: %v", name, err)
			}
			continue
		}
		for _, s := range required {
			want := s.Context + " is required in " + Mode + " mode: cdk deploy -c " + s.Context + "=" + s.Example
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("profile %s without %s: err = %v, want %q", name, s.Context, err, want)
			}
		}
		context := map[string]string{"profile": name}
		for _, s := range required {
			context[s.Context] = s.Example
		}
		cfg, _, err := configure(func(k string) string { return context[k] })
		if err != nil {
			t.Errorf("profile %s with its required settings: %v", name, err)
		}
		for _, s := range required {
			if cfg.Effect[s.Env] != s.Example {
				t.Errorf("profile %s: %s = %q, want %q", name, s.Env, cfg.Effect[s.Env], s.Example)
			}
		}
	}

	// exampleSettings: the checks' synth takes each Example.
	for _, name := range []string{"default", "hardened"} {
		cfg, _, err := configure(func(k string) string { return map[string]string{"profile": name, "exampleSettings": "true"}[k] })
		if err != nil {
			t.Errorf("profile %s with exampleSettings: %v", name, err)
		}
		for _, s := range requiredIn(contract.EffectSettings, Mode) {
			if cfg.Effect[s.Env] != s.Example {
				t.Errorf("profile %s with exampleSettings: %s = %q, want the example %q", name, s.Env, cfg.Effect[s.Env], s.Example)
			}
		}
	}

	context := map[string]string{"profile": "test"}
	want := map[string]string{}
	for _, s := range contract.EffectSettings {
		if v := "https://effect.example/" + s.Env; s.AllowedIn(Mode) && (s.Valid == nil || s.Valid(v)) {
			context[s.Context], want[s.Env] = v, v
		}
	}
	cfg, _, err := configure(func(k string) string { return context[k] })
	if err != nil {
		t.Fatal(err)
	}
	for env, v := range want {
		if cfg.Effect[env] != v {
			t.Errorf("test profile with -c: %s = %q, want %q", env, cfg.Effect[env], v)
		}
	}
}
