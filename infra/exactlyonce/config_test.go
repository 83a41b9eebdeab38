package exactlyonce_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"

	"github.com/exactlyonce/sqsidem/infra/exactlyonce"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

func TestDefaultConfig(t *testing.T) {
	cfg := exactlyonce.DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := cfg.VisibilityTimeout(); got != 180*time.Second {
		t.Errorf("visibility = %s, want 3m", got)
	}
	if got := cfg.BacklogAgeThreshold(); got != 18*time.Minute {
		t.Errorf("backlog alarm threshold = %s, want (5+1) x 3m", got)
	}
	if cfg.RunbookURL != exactlyonce.DefaultRunbookURL || cfg.Tracing != awslambda.Tracing_ACTIVE {
		t.Errorf("RunbookURL %q, Tracing %q; want this repository's runbook and active tracing", cfg.RunbookURL, cfg.Tracing)
	}
	if cfg.Mode != consumer.DefaultMode || cfg.UnknownOutcome != consumer.DefaultUnknownOutcome {
		t.Errorf("Mode %q, UnknownOutcome %q; want the runtime's defaults", cfg.Mode, cfg.UnknownOutcome)
	}
	if (exactlyonce.Config{}).Validate() == nil {
		t.Error("the zero Config validates as is; NewConsumer must apply the defaults first")
	}
}

func TestWithDefaults(t *testing.T) {
	if got, want := (exactlyonce.Config{}).WithDefaults(), exactlyonce.DefaultConfig(); got != want {
		t.Errorf("zero Config with defaults = %+v, want DefaultConfig %+v", got, want)
	}
	got := exactlyonce.Config{FunctionTimeout: time.Minute, MaxConcurrency: 8, ReservedConcurrency: 8}.WithDefaults()
	if got.FunctionTimeout != time.Minute || got.MaxConcurrency != 8 || got.ReservedConcurrency != 8 || got.BatchSize != 10 {
		t.Errorf("set fields must be kept and the rest defaulted, got %+v", got)
	}
	if err := got.Validate(); err != nil {
		t.Error(err)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*exactlyonce.Config)
		wantErr string // "" means valid
	}{
		{"default", func(*exactlyonce.Config) {}, ""},
		{"45s timeout", func(c *exactlyonce.Config) { c.FunctionTimeout = 45 * time.Second }, ""},
		{"transactional", func(c *exactlyonce.Config) { c.Mode = consumer.ModeTransactional }, ""},
		{"zero timeout", func(c *exactlyonce.Config) { c.FunctionTimeout = 0 }, "FunctionTimeout must be positive"},
		{"fractional timeout", func(c *exactlyonce.Config) { c.FunctionTimeout = 1500 * time.Millisecond }, "whole seconds"},
		{"timeout over 15m", func(c *exactlyonce.Config) { c.FunctionTimeout = 16 * time.Minute }, "at most 15m"},
		{"timeout <= margin", func(c *exactlyonce.Config) { c.FunctionTimeout = 3 * time.Second }, "must exceed SafetyMargin"},
		{"no margin", func(c *exactlyonce.Config) { c.SafetyMargin = 0 }, "SafetyMargin must be positive"},
		{"concurrency 1", func(c *exactlyonce.Config) { c.MaxConcurrency = 1 }, "MaxConcurrency must be in 2..1000"},
		{"reserved equals max", func(c *exactlyonce.Config) { c.ReservedConcurrency = c.MaxConcurrency }, ""},
		{"reserved above max", func(c *exactlyonce.Config) { c.ReservedConcurrency = 50 }, ""},
		{"reserved below max", func(c *exactlyonce.Config) { c.ReservedConcurrency = c.MaxConcurrency - 1 }, "ReservedConcurrency (4) must be 0 (none) or >= MaxConcurrency (5)"},
		{"reserved negative", func(c *exactlyonce.Config) { c.ReservedConcurrency = -1 }, "ReservedConcurrency"},
		{"batch 0", func(c *exactlyonce.Config) { c.BatchSize = 0 }, "BatchSize must be in 1..10"},
		{"batch 11", func(c *exactlyonce.Config) { c.BatchSize = 11 }, "BatchSize must be in 1..10"},
		{"receive 0", func(c *exactlyonce.Config) { c.MaxReceiveCount = 0 }, "MaxReceiveCount"},
		{"memory", func(c *exactlyonce.Config) { c.MemoryMB = 64 }, "MemoryMB"},
		{"receipts expire early", func(c *exactlyonce.Config) { c.ReceiptRetention = time.Hour }, "must outlive every redelivery"},
		{"dlq retention", func(c *exactlyonce.Config) { c.DLQRetention = 15 * 24 * time.Hour }, "DLQRetention"},
		{"dlq retention equals queue", func(c *exactlyonce.Config) { c.DLQRetention = c.QueueRetention }, "DLQRetention (96h0m0s) must exceed QueueRetention"},
		{"dlq retention below queue", func(c *exactlyonce.Config) { c.QueueRetention, c.DLQRetention = 14*24*time.Hour, 4*24*time.Hour }, "must exceed QueueRetention"},
		{"dlq retention just above queue", func(c *exactlyonce.Config) { c.DLQRetention = c.QueueRetention + time.Minute }, ""},
		// 5 x 180s = 15m: the fifth receive cannot finish before expiry.
		{"retries outlast retention", func(c *exactlyonce.Config) { c.QueueRetention = 15 * time.Minute }, "expire before reaching the DLQ"},
		{"retries fit retention", func(c *exactlyonce.Config) { c.QueueRetention = 15*time.Minute + time.Second }, ""},
		// 1000 x 6m = 100h >= 96h.
		{"many retries outlast retention", func(c *exactlyonce.Config) { c.MaxReceiveCount, c.FunctionTimeout = 1000, time.Minute }, "MaxReceiveCount x VisibilityTimeout (1000 x 6m0s)"},
		{"mode", func(c *exactlyonce.Config) { c.Mode = "at-least-once" }, "Mode must be"},
		{"hold", func(c *exactlyonce.Config) { c.UnknownOutcome = consumer.UnknownHold }, ""},
		{"unknown outcome empty", func(c *exactlyonce.Config) { c.UnknownOutcome = "" }, `UnknownOutcome must be one of [retry hold], got ""`},
		{"unknown outcome misspelt", func(c *exactlyonce.Config) { c.UnknownOutcome = "park" }, `UnknownOutcome must be one of [retry hold], got "park"`},
		// Nothing to hold: the effect commits with its receipt.
		{"hold, transactional", func(c *exactlyonce.Config) {
			c.Mode, c.UnknownOutcome = consumer.ModeTransactional, consumer.UnknownHold
		}, `UnknownOutcome "hold" has no effect in transactional mode`},
		{"rerun threshold", func(c *exactlyonce.Config) { c.AlarmRerunThreshold = 10 }, ""},
		{"rerun threshold negative", func(c *exactlyonce.Config) { c.AlarmRerunThreshold = -1 },
			"AlarmRerunThreshold must be 0 (AlarmRerun fires on the first re-run) or the number of re-runs a minute it lets pass, got -1"},
		// Nothing there re-runs an effect: the first Rerun must alarm.
		{"rerun threshold, hold", func(c *exactlyonce.Config) { c.UnknownOutcome, c.AlarmRerunThreshold = consumer.UnknownHold, 3 },
			`AlarmRerunThreshold (3) lets re-runs pass, but UnknownOutcome "hold" never re-runs an effect`},
		{"rerun threshold, transactional", func(c *exactlyonce.Config) { c.Mode, c.AlarmRerunThreshold = consumer.ModeTransactional, 3 },
			"AlarmRerunThreshold (3) lets re-runs pass, but transactional mode never re-runs an effect"},
		{"namespace empty", func(c *exactlyonce.Config) { c.Namespace = "" }, "Namespace must be non-empty"},
		{"namespace with separator", func(c *exactlyonce.Config) { c.Namespace = "a#b" }, `without "#"`},
		{"namespace other", func(c *exactlyonce.Config) { c.Namespace = "gift-cards" }, ""},
		{"removal", func(c *exactlyonce.Config) { c.RemovalPolicy = "" }, "RemovalPolicy"},
		{"log retention", func(c *exactlyonce.Config) { c.LogRetention = "" }, "LogRetention"},
		{"alarm topic", func(c *exactlyonce.Config) { c.AlarmTopicARN = "arn:aws:sns:eu-west-1:123456789012:alarms" }, ""},
		{"alarm topic not an arn", func(c *exactlyonce.Config) { c.AlarmTopicARN = "alarms" }, "AlarmTopicARN"},
		{"alarm topic not sns", func(c *exactlyonce.Config) { c.AlarmTopicARN = "arn:aws:sqs:eu-west-1:123456789012:alarms" }, "AlarmTopicARN"},
		{"alarm topic empty part", func(c *exactlyonce.Config) { c.AlarmTopicARN = "arn:aws:sns::123456789012:alarms" }, "AlarmTopicARN"},
		{"runbook of a fork", func(c *exactlyonce.Config) { c.RunbookURL = "https://github.com/acme/sqsidem/blob/v2/RUNBOOK.md" }, ""},
		{"runbook on an intranet", func(c *exactlyonce.Config) { c.RunbookURL = "http://wiki.internal:8080/ops/runbook?page=orders" }, ""},
		{"runbook empty", func(c *exactlyonce.Config) { c.RunbookURL = "" }, `RunbookURL "" must be set`},
		{"runbook relative", func(c *exactlyonce.Config) { c.RunbookURL = "cmd/idemctl/RUNBOOK.md" }, "must be an absolute http(s) URL"},
		{"runbook without host", func(c *exactlyonce.Config) { c.RunbookURL = "https:///RUNBOOK.md" }, "must be an absolute http(s) URL"},
		{"runbook not http", func(c *exactlyonce.Config) { c.RunbookURL = "ftp://example.com/RUNBOOK.md" }, "must be an absolute http(s) URL"},
		{"runbook with fragment", func(c *exactlyonce.Config) { c.RunbookURL = exactlyonce.DefaultRunbookURL + "#alarms" }, "without a fragment (the alarms add #<alarm id>): it has one"},
		{"runbook with empty fragment", func(c *exactlyonce.Config) { c.RunbookURL = exactlyonce.DefaultRunbookURL + "#" }, "without a fragment"},
		{"runbook with space", func(c *exactlyonce.Config) { c.RunbookURL = "https://example.com/run book" }, "white space"},
		{"runbook with user", func(c *exactlyonce.Config) { c.RunbookURL = "https://ops:secret@example.com/runbook" }, "user information"},
		{"runbook too long", func(c *exactlyonce.Config) { c.RunbookURL = "https://example.com/" + strings.Repeat("r", 500) }, "at most 512 bytes"},
		{"tracing pass-through", func(c *exactlyonce.Config) { c.Tracing = awslambda.Tracing_PASS_THROUGH }, ""},
		{"tracing disabled", func(c *exactlyonce.Config) { c.Tracing = awslambda.Tracing_DISABLED }, ""},
		{"tracing empty", func(c *exactlyonce.Config) { c.Tracing = "" }, `Tracing must be one of [ACTIVE PASS_THROUGH DISABLED], got ""`},
		{"tracing misspelt", func(c *exactlyonce.Config) { c.Tracing = "Active" }, `Tracing must be one of [ACTIVE PASS_THROUGH DISABLED], got "Active"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := exactlyonce.DefaultConfig()
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

func TestValidateReportsAllErrors(t *testing.T) {
	cfg := exactlyonce.DefaultConfig()
	cfg.BatchSize, cfg.MaxConcurrency = 0, 0
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "BatchSize") || !strings.Contains(err.Error(), "MaxConcurrency") {
		t.Fatalf("want both errors, got %v", err)
	}
}
