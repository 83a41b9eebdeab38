package main

import (
	"log/slog"
	"strings"
	"time"

	"github.com/exactlyonce/sqsidem/functions/internal/envconfig"
	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// Mode selects how the effect is guarded.
type Mode string

const (
	// ModeLease runs any effect under a lease (the documented window: a
	// crash after the effect and before the receipt can repeat it).
	ModeLease Mode = "lease"
	// ModeTransactional commits the ledger update with the receipt in one
	// DynamoDB transaction: exactly once, but DynamoDB effects only.
	ModeTransactional Mode = "transactional"
)

// Config is the consumer's configuration, read from the environment.
type Config struct {
	IdemTable    string        // IDEM_TABLE, required
	LedgerTable  string        // LEDGER_TABLE, required
	Namespace    string        // IDEM_NAMESPACE, default "consumer"
	Mode         Mode          // IDEM_MODE, lease|transactional, default lease
	Retention    time.Duration // IDEM_RETENTION, default 168h
	SafetyMargin time.Duration // IDEM_SAFETY_MARGIN, default 2s
	Lease        time.Duration // IDEM_LEASE, 0: the remaining Lambda time
	CacheSize    int           // IDEM_CACHE_SIZE, default 1000, 0: off
	Concurrency  int           // BATCH_CONCURRENCY, default 10
	EffectURL    string        // EFFECT_URL, optional absolute http(s) URL
	LogLevel     slog.Level    // LOG_LEVEL, default INFO
	LogBodies    bool          // LOG_BODIES, default false
	Faults       Faults        // FAULT_*, see faults.go
}

// ConfigError is the error LoadConfig returns. It is an alias, so code that
// matches *ConfigError with errors.As keeps working.
type ConfigError = envconfig.Error

// LoadConfig reads the configuration with getenv (os.Getenv in main). The
// error is a *ConfigError naming every missing or wrong variable.
func LoadConfig(getenv func(string) string) (Config, error) {
	e := envconfig.NewReader(getenv)
	c := Config{
		IdemTable:    e.Required("IDEM_TABLE"),
		LedgerTable:  e.Required("LEDGER_TABLE"),
		Namespace:    e.String("IDEM_NAMESPACE", "consumer"),
		Mode:         Mode(strings.ToLower(e.String("IDEM_MODE", string(ModeLease)))),
		Retention:    e.Duration("IDEM_RETENTION", idem.DefaultRetention),
		SafetyMargin: e.Duration("IDEM_SAFETY_MARGIN", idem.DefaultSafetyMargin),
		Lease:        e.Duration("IDEM_LEASE", 0),
		CacheSize:    e.Int("IDEM_CACHE_SIZE", 1000, 0),
		Concurrency:  e.Int("BATCH_CONCURRENCY", 10, 1),
		EffectURL:    e.HTTPURL("EFFECT_URL"),
		LogLevel:     e.Level("LOG_LEVEL"),
		LogBodies:    e.Bool("LOG_BODIES"),
		Faults:       loadFaults(e),
	}
	if c.Mode != ModeLease && c.Mode != ModeTransactional {
		e.Fail("IDEM_MODE", "%q is neither %q nor %q", c.Mode, ModeLease, ModeTransactional)
	}
	if c.Lease != 0 && c.Lease <= c.SafetyMargin {
		e.Fail("IDEM_LEASE", "%s leaves no time for the effect after the %s safety margin", c.Lease, c.SafetyMargin)
	}
	if c.Mode == ModeTransactional && c.EffectURL != "" {
		e.Fail("EFFECT_URL", "set, but IDEM_MODE=transactional only commits DynamoDB writes and would never call it")
	}
	return c, e.Err("consumer")
}

// GuardOptions are the idem options the configuration implies.
func (c Config) GuardOptions() []idem.Option {
	opts := []idem.Option{idem.WithRetention(c.Retention), idem.WithSafetyMargin(c.SafetyMargin)}
	if c.Lease > 0 {
		opts = append(opts, idem.WithLease(c.Lease))
	}
	if c.CacheSize > 0 {
		opts = append(opts, idem.WithCache(c.CacheSize))
	}
	return opts
}
