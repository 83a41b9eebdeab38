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
	return "producer configuration: " + strings.Join(parts, "; ")
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
		QueueURL:     e.required("QUEUE_URL"),
		Namespace:    e.str("IDEM_NAMESPACE", "producer"),
		Retention:    e.duration("IDEM_RETENTION", idem.DefaultRetention),
		SafetyMargin: e.duration("IDEM_SAFETY_MARGIN", idem.DefaultSafetyMargin),
		Lease:        e.duration("IDEM_LEASE", 0),
		CacheSize:    e.integer("IDEM_CACHE_SIZE", 1000, 0),
		Concurrency:  e.integer("PRODUCER_CONCURRENCY", 50, 1),
		SendAttempts: e.integer("SEND_ATTEMPTS", 3, 1),
		LogLevel:     e.level("LOG_LEVEL"),
		Faults:       loadFaults(e),
	}
	if c.QueueURL != "" {
		c.QueueURL = e.httpURL("QUEUE_URL")
	}
	if c.Lease != 0 && c.Lease <= c.SafetyMargin {
		e.fail("IDEM_LEASE", "%s leaves no time for the send after the %s safety margin", c.Lease, c.SafetyMargin)
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
