package main

import (
	"log/slog"
	"time"

	"github.com/exactlyonce/sqsidem/functions/internal/envconfig"
	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// Config is the producer's configuration, read from the environment.
type Config struct {
	IdemTable    string        // IDEM_TABLE, required
	QueueURL     string        // QUEUE_URL, required
	Namespace    string        // IDEM_NAMESPACE, default "producer"
	Retention    time.Duration // IDEM_RETENTION, default 168h
	SafetyMargin time.Duration // IDEM_SAFETY_MARGIN, default 2s
	Lease        time.Duration // IDEM_LEASE, 0: the remaining Lambda time
	CacheSize    int           // IDEM_CACHE_SIZE, default 1000, 0: off
	Concurrency  int           // PRODUCER_CONCURRENCY, orders guarded at once, default 50
	SendAttempts int           // SEND_ATTEMPTS, tries per message, default 3
	LogLevel     slog.Level    // LOG_LEVEL, default INFO
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
		QueueURL:     e.Required("QUEUE_URL"),
		Namespace:    e.String("IDEM_NAMESPACE", "producer"),
		Retention:    e.Duration("IDEM_RETENTION", idem.DefaultRetention),
		SafetyMargin: e.Duration("IDEM_SAFETY_MARGIN", idem.DefaultSafetyMargin),
		Lease:        e.Duration("IDEM_LEASE", 0),
		CacheSize:    e.Int("IDEM_CACHE_SIZE", 1000, 0),
		Concurrency:  e.Int("PRODUCER_CONCURRENCY", 50, 1),
		SendAttempts: e.Int("SEND_ATTEMPTS", 3, 1),
		LogLevel:     e.Level("LOG_LEVEL"),
		Faults:       loadFaults(e),
	}
	if c.QueueURL != "" {
		c.QueueURL = e.HTTPURL("QUEUE_URL")
	}
	if c.Lease != 0 && c.Lease <= c.SafetyMargin {
		e.Fail("IDEM_LEASE", "%s leaves no time for the send after the %s safety margin", c.Lease, c.SafetyMargin)
	}
	return c, e.Err("producer")
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
