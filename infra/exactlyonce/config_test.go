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

		// Provisioned pollers: the mapping's limits, and never with
		// MaxConcurrency (the service refuses the pair).
		{"pollers", provisioned(10, 100), ""},
		{"pollers at the limits", provisioned(200, 2000), ""},
		{"pollers at the floor", provisioned(2, 2), ""},
		{"pollers with max concurrency", func(c *exactlyonce.Config) { c.MinPollers, c.MaxPollers = 10, 100 },
			"MaxConcurrency (5) and provisioned pollers (MinPollers 10, MaxPollers 100) are exclusive: the service refuses an SQS mapping with both"},
		{"min pollers 1", provisioned(1, 100), "MinPollers must be in 2..200 (an SQS mapping's provisioned minimum), got 1"},
		{"min pollers 201", provisioned(201, 300), "MinPollers must be in 2..200 (an SQS mapping's provisioned minimum), got 201"},
		{"max pollers 2001", provisioned(2, 2001), "MaxPollers must be in 2..2000 (an SQS mapping's provisioned maximum), got 2001"},
		{"max pollers 1", provisioned(2, 1), "MaxPollers must be in 2..2000 (an SQS mapping's provisioned maximum), got 1"},
		{"min pollers above max", provisioned(50, 20), "MinPollers (50) must not exceed MaxPollers (20)"},
		{"negative pollers", provisioned(-1, 100), "MinPollers must be in 2..200"},
		{"no pollers, no max concurrency", func(c *exactlyonce.Config) { c.MaxConcurrency = 0 },
			"MaxConcurrency must be in 2..1000 (AWS minimum is 2), got 0; or set provisioned pollers (MinPollers, MaxPollers) instead"},
		// Each poller invokes up to 10 batches at once.
		{"pollers, reserved enough", func(c *exactlyonce.Config) { provisioned(2, 20)(c); c.ReservedConcurrency = 200 }, ""},
		{"pollers, reserved too few", func(c *exactlyonce.Config) { provisioned(2, 20)(c); c.ReservedConcurrency = 199 },
			"ReservedConcurrency (199) must be 0 (none) or >= 10 x MaxPollers (20)"},

		// Managed Instances: the service's limits, and what the default
		// compute's settings become there.
		{"managed instances", managed(8, 4096), ""},
		{"managed instances, 8 GiB per vCPU", func(c *exactlyonce.Config) { managed(64, 16384)(c); c.ManagedInstances.MemoryGiBPerVCPU = 8 }, ""},
		// Visibility 9h; 5 receives x 9h within the queue's 4 days.
		{"managed instances, 90m", func(c *exactlyonce.Config) { managed(8, 4096)(c); c.FunctionTimeout = 90 * time.Minute }, ""},
		{"managed instances, 91m", func(c *exactlyonce.Config) { managed(8, 4096)(c); c.FunctionTimeout = 91 * time.Minute },
			"FunctionTimeout must be at most 90m on Managed Instances (their limit for invocations by an event source mapping), got 1h31m0s"},
		{"concurrency 1601", managed(1601, 4096), "ManagedInstances.Concurrency must be in 1..1600 (PerExecutionEnvironmentMaxConcurrency), got 1601"},
		{"concurrency negative", managed(-1, 4096), "ManagedInstances.Concurrency must be in 1..1600"},
		{"memory per vCPU 3", func(c *exactlyonce.Config) { managed(8, 6144)(c); c.ManagedInstances.MemoryGiBPerVCPU = 3 },
			"ManagedInstances.MemoryGiBPerVCPU must be one of [2 4 8] (the memory-to-vCPU ratios Managed Instances offer), got 3"},
		{"managed memory below 2 GiB", managed(8, 1024), "MemoryMB must be in 2048..32768 on Managed Instances (an execution environment has 2 to 32 GiB), got 1024"},
		{"managed memory above 32 GiB", managed(8, 32768+2048), "MemoryMB must be in 2048..32768 on Managed Instances"},
		{"managed memory, part of a vCPU", func(c *exactlyonce.Config) { managed(8, 6144)(c); c.ManagedInstances.MemoryGiBPerVCPU = 4 },
			"MemoryMB (6144) must be a multiple of 1024 x ManagedInstances.MemoryGiBPerVCPU (4096): an execution environment has whole vCPUs of 4 GiB each"},
		{"managed memory above the default's 10 GiB", managed(8, 16384), ""},
		{"default compute memory above 10 GiB", func(c *exactlyonce.Config) { c.MemoryMB = 16384 }, "MemoryMB must be in 128..10240, got 16384"},
		{"managed instances, reserved", func(c *exactlyonce.Config) { managed(8, 4096)(c); c.ReservedConcurrency = 10 },
			"ReservedConcurrency (10) is for Lambda's default compute: on Managed Instances the function's concurrency is its execution environments x ManagedInstances.Concurrency"},
		{"environments", func(c *exactlyonce.Config) {
			managed(8, 4096)(c)
			c.ManagedInstances.MinEnvironments, c.ManagedInstances.MaxEnvironments = 3, 30
		}, ""},
		{"environments min above max", func(c *exactlyonce.Config) {
			managed(8, 4096)(c)
			c.ManagedInstances.MinEnvironments, c.ManagedInstances.MaxEnvironments = 5, 4
		},
			"ManagedInstances.MinEnvironments (5) must not exceed MaxEnvironments (4)"},
		{"environments above 15000", func(c *exactlyonce.Config) { managed(8, 4096)(c); c.ManagedInstances.MaxEnvironments = 15001 },
			"ManagedInstances.MaxEnvironments must be 0 (the service's default) or in 1..15000, got 15001"},
		{"environments negative", func(c *exactlyonce.Config) { managed(8, 4096)(c); c.ManagedInstances.MinEnvironments = -1 },
			"ManagedInstances.MinEnvironments must be 0 (the service's default) or in 1..15000, got -1"},
		// 1 environment x 4 invocations < the mapping's 5 batches at once.
		{"environments too few for the mapping", func(c *exactlyonce.Config) { managed(4, 4096)(c); c.ManagedInstances.MaxEnvironments = 1 },
			"ManagedInstances.MaxEnvironments x Concurrency (1 x 4 = 4) must be at least MaxConcurrency (5)"},
		{"environments too few for the pollers", func(c *exactlyonce.Config) {
			managed(4, 4096)(c)
			provisioned(2, 20)(c)
			c.ManagedInstances.MaxEnvironments = 49
		}, "ManagedInstances.MaxEnvironments x Concurrency (49 x 4 = 196) must be at least 10 x MaxPollers (20)"},
		{"environments enough for the pollers", func(c *exactlyonce.Config) {
			managed(4, 4096)(c)
			provisioned(2, 20)(c)
			c.ManagedInstances.MaxEnvironments = 50
		}, ""},
		{"managed settings without concurrency", func(c *exactlyonce.Config) { c.ManagedInstances.MemoryGiBPerVCPU = 4 },
			"ManagedInstances {Concurrency:0 MemoryGiBPerVCPU:4 MinEnvironments:0 MaxEnvironments:0} sets no Concurrency"},
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

// provisioned sets the mapping's pollers, and MaxConcurrency 0 as they
// require.
func provisioned(minPollers, maxPollers int) func(*exactlyonce.Config) {
	return func(c *exactlyonce.Config) { c.MinPollers, c.MaxPollers, c.MaxConcurrency = minPollers, maxPollers, 0 }
}

// managed runs the consumer on Managed Instances, concurrency invocations
// an environment, 2 GiB per vCPU.
func managed(concurrency, memoryMB int) func(*exactlyonce.Config) {
	return func(c *exactlyonce.Config) {
		c.ManagedInstances = exactlyonce.ManagedInstances{Concurrency: concurrency, MemoryGiBPerVCPU: 2}
		c.MemoryMB = memoryMB
	}
}

// TestWithDefaultsScaling: provisioned mode and Managed Instances take the
// service's defaults, and those keep the config valid: no MaxConcurrency
// beside pollers, memory enough for an execution environment of one vCPU.
func TestWithDefaultsScaling(t *testing.T) {
	tests := []struct {
		name string
		in   exactlyonce.Config
		want func(exactlyonce.Config) bool
		what string
	}{
		{"min pollers only", exactlyonce.Config{MinPollers: 20}, func(c exactlyonce.Config) bool {
			return c.MinPollers == 20 && c.MaxPollers == 200 && c.MaxConcurrency == 0
		}, "MinPollers 20, MaxPollers 200 (the service's default), MaxConcurrency 0"},
		{"max pollers only", exactlyonce.Config{MaxPollers: 50}, func(c exactlyonce.Config) bool {
			return c.MinPollers == 2 && c.MaxPollers == 50 && c.MaxConcurrency == 0
		}, "MinPollers 2 (the service's default), MaxPollers 50, MaxConcurrency 0"},
		{"managed instances", exactlyonce.Config{ManagedInstances: exactlyonce.ManagedInstances{Concurrency: 8}}, func(c exactlyonce.Config) bool {
			return c.ManagedInstances.MemoryGiBPerVCPU == 2 && c.MemoryMB == 2048 && c.MaxConcurrency == 5
		}, "2 GiB per vCPU, MemoryMB 2048, MaxConcurrency 5"},
		{"managed instances, 8 GiB per vCPU", exactlyonce.Config{ManagedInstances: exactlyonce.ManagedInstances{Concurrency: 8, MemoryGiBPerVCPU: 8}}, func(c exactlyonce.Config) bool {
			return c.MemoryMB == 8192
		}, "MemoryMB 8192 (one vCPU)"},
		{"managed instances, memory given", exactlyonce.Config{MemoryMB: 4096, ManagedInstances: exactlyonce.ManagedInstances{Concurrency: 8}}, func(c exactlyonce.Config) bool {
			return c.MemoryMB == 4096
		}, "MemoryMB 4096, as given"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in.WithDefaults()
			if !tt.want(got) {
				t.Errorf("WithDefaults = %+v, want %s", got, tt.what)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("the defaults do not validate: %v", err)
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
