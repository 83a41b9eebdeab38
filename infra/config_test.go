package main

import (
	"strings"
	"testing"
	"time"
)

func TestProfilesAreValid(t *testing.T) {
	for name, cfg := range map[string]Config{"default": DefaultConfig(), "test": TestConfig()} {
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if got := TestConfig().VisibilityTimeout(); got != 12*time.Second {
		t.Errorf("test profile visibility = %s, want 12s", got)
	}
	if got := DefaultConfig().VisibilityTimeout(); got != 180*time.Second {
		t.Errorf("default profile visibility = %s, want 3m", got)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantErr string // "" means valid
	}{
		{"default", func(*Config) {}, ""},
		{"45s timeout", func(c *Config) { c.FunctionTimeout = 45 * time.Second }, ""},
		{"transactional", func(c *Config) { c.Mode = ModeTransactional }, ""},
		{"zero timeout", func(c *Config) { c.FunctionTimeout = 0 }, "FunctionTimeout must be positive"},
		{"fractional timeout", func(c *Config) { c.FunctionTimeout = 1500 * time.Millisecond }, "whole seconds"},
		{"timeout over 15m", func(c *Config) { c.FunctionTimeout = 16 * time.Minute }, "at most 15m"},
		{"timeout <= margin", func(c *Config) { c.FunctionTimeout = 3 * time.Second }, "must exceed SafetyMargin"},
		{"no margin", func(c *Config) { c.SafetyMargin = 0 }, "SafetyMargin must be positive"},
		{"concurrency 1", func(c *Config) { c.MaxConcurrency = 1 }, "MaxConcurrency must be in 2..1000"},
		{"batch 0", func(c *Config) { c.BatchSize = 0 }, "BatchSize must be in 1..10"},
		{"batch 11", func(c *Config) { c.BatchSize = 11 }, "BatchSize must be in 1..10"},
		{"receive 0", func(c *Config) { c.MaxReceiveCount = 0 }, "MaxReceiveCount"},
		{"memory", func(c *Config) { c.MemoryMB = 64 }, "MemoryMB"},
		{"receipts expire early", func(c *Config) { c.ReceiptRetention = time.Hour }, "must outlive every redelivery"},
		{"dlq retention", func(c *Config) { c.DLQRetention = 15 * 24 * time.Hour }, "DLQRetention"},
		{"dlq retention equals queue", func(c *Config) { c.DLQRetention = c.QueueRetention }, "DLQRetention (96h0m0s) must exceed QueueRetention"},
		{"dlq retention below queue", func(c *Config) { c.QueueRetention, c.DLQRetention = 14*24*time.Hour, 4*24*time.Hour }, "must exceed QueueRetention"},
		{"dlq retention just above queue", func(c *Config) { c.DLQRetention = c.QueueRetention + time.Minute }, ""},
		// 5 x 180s = 15m: the fifth receive cannot finish before expiry.
		{"retries outlast retention", func(c *Config) { c.QueueRetention = 15 * time.Minute }, "expire before reaching the DLQ"},
		{"retries fit retention", func(c *Config) { c.QueueRetention = 15*time.Minute + time.Second }, ""},
		// 1000 x 6m = 100h >= 96h.
		{"many retries outlast retention", func(c *Config) { c.MaxReceiveCount, c.FunctionTimeout = 1000, time.Minute }, "MaxReceiveCount x VisibilityTimeout (1000 x 6m0s)"},
		{"mode", func(c *Config) { c.Mode = "at-least-once" }, "Mode must be"},
		{"removal", func(c *Config) { c.RemovalPolicy = "" }, "RemovalPolicy"},
		{"effect url in lease mode", func(c *Config) { c.EffectURL = "https://x.example" }, ""},
		{"effect url http with path", func(c *Config) { c.EffectURL = "http://localhost:8080/issue" }, ""},
		{"effect url relative", func(c *Config) { c.EffectURL = "/issue" }, "is not an absolute http(s) URL"},
		{"effect url no host", func(c *Config) { c.EffectURL = "https:///issue" }, "is not an absolute http(s) URL"},
		{"effect url scheme", func(c *Config) { c.EffectURL = "ftp://x.example" }, "is not an absolute http(s) URL"},
		{"effect url unparsable", func(c *Config) { c.EffectURL = "http://x.example/%zz" }, "is not an absolute http(s) URL"},
		{"alarm topic", func(c *Config) { c.AlarmTopicARN = "arn:aws:sns:eu-west-1:123456789012:alarms" }, ""},
		{"alarm topic not an arn", func(c *Config) { c.AlarmTopicARN = "alarms" }, "AlarmTopicARN"},
		{"alarm topic not sns", func(c *Config) { c.AlarmTopicARN = "arn:aws:sqs:eu-west-1:123456789012:alarms" }, "AlarmTopicARN"},
		{"effect url in transactional mode", func(c *Config) { c.Mode, c.EffectURL = ModeTransactional, "https://x.example" }, "EffectURL must be empty"},
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

func TestValidateReportsAllErrors(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BatchSize, cfg.MaxConcurrency = 0, 0
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "BatchSize") || !strings.Contains(err.Error(), "MaxConcurrency") {
		t.Fatalf("want both errors, got %v", err)
	}
}
