package main

import (
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

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

// ConfigError lists every problem found in the environment at once, so a
// deployment is fixed in one round.
type ConfigError struct {
	Problems []Problem
}

// Problem is one bad or missing environment variable.
type Problem struct {
	Var    string
	Reason string
}

func (e *ConfigError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Var + ": " + p.Reason
	}
	return "consumer configuration: " + strings.Join(parts, "; ")
}

// env reads variables and collects their problems.
type env struct {
	getenv   func(string) string
	problems []Problem
}

func (e *env) fail(name, format string, args ...any) {
	e.problems = append(e.problems, Problem{Var: name, Reason: fmt.Sprintf(format, args...)})
}

func (e *env) required(name string) string {
	v := strings.TrimSpace(e.getenv(name))
	if v == "" {
		e.fail(name, "required")
	}
	return v
}

func (e *env) str(name, def string) string {
	if v := strings.TrimSpace(e.getenv(name)); v != "" {
		return v
	}
	return def
}

func (e *env) duration(name string, def time.Duration) time.Duration {
	v := strings.TrimSpace(e.getenv(name))
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		e.fail(name, "%q is not a positive Go duration such as 90s or 168h", v)
		return def
	}
	return d
}

func (e *env) integer(name string, def, min int) int {
	v := strings.TrimSpace(e.getenv(name))
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min {
		e.fail(name, "%q is not an integer >= %d", v, min)
		return def
	}
	return n
}

func (e *env) boolean(name string) bool {
	v := strings.TrimSpace(e.getenv(name))
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		e.fail(name, "%q is not a boolean (true or false)", v)
	}
	return b
}

func (e *env) level(name string) slog.Level {
	var l slog.Level
	v := strings.TrimSpace(e.getenv(name))
	if v == "" {
		return slog.LevelInfo
	}
	if err := l.UnmarshalText([]byte(v)); err != nil {
		e.fail(name, "%q is not one of DEBUG, INFO, WARN, ERROR", v)
		return slog.LevelInfo
	}
	return l
}

func (e *env) httpURL(name string) string {
	v := strings.TrimSpace(e.getenv(name))
	if v == "" {
		return ""
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		e.fail(name, "%q is not an absolute http(s) URL", v)
	}
	return v
}

// LoadConfig reads the configuration with getenv (os.Getenv in main). The
// error is a *ConfigError naming every missing or wrong variable.
func LoadConfig(getenv func(string) string) (Config, error) {
	e := &env{getenv: getenv}
	c := Config{
		IdemTable:    e.required("IDEM_TABLE"),
		LedgerTable:  e.required("LEDGER_TABLE"),
		Namespace:    e.str("IDEM_NAMESPACE", "consumer"),
		Mode:         Mode(strings.ToLower(e.str("IDEM_MODE", string(ModeLease)))),
		Retention:    e.duration("IDEM_RETENTION", idem.DefaultRetention),
		SafetyMargin: e.duration("IDEM_SAFETY_MARGIN", idem.DefaultSafetyMargin),
		Lease:        e.duration("IDEM_LEASE", 0),
		CacheSize:    e.integer("IDEM_CACHE_SIZE", 1000, 0),
		Concurrency:  e.integer("BATCH_CONCURRENCY", 10, 1),
		EffectURL:    e.httpURL("EFFECT_URL"),
		LogLevel:     e.level("LOG_LEVEL"),
		LogBodies:    e.boolean("LOG_BODIES"),
		Faults:       loadFaults(e),
	}
	if c.Mode != ModeLease && c.Mode != ModeTransactional {
		e.fail("IDEM_MODE", "%q is neither %q nor %q", c.Mode, ModeLease, ModeTransactional)
	}
	if c.Lease != 0 && c.Lease <= c.SafetyMargin {
		e.fail("IDEM_LEASE", "%s leaves no time for the effect after the %s safety margin", c.Lease, c.SafetyMargin)
	}
	if c.Mode == ModeTransactional && c.EffectURL != "" {
		e.fail("EFFECT_URL", "set, but IDEM_MODE=transactional only commits DynamoDB writes and would never call it")
	}
	if len(e.problems) > 0 {
		return c, &ConfigError{Problems: e.problems}
	}
	return c, nil
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
