package consumer

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrConfig is wrapped by every configuration error: a missing or wrong
// variable, or an effect that does not fit the configuration.
var ErrConfig = errors.New("consumer: configuration")

// ConfigError lists every problem found in the environment at once, so
// that a deployment is fixed in one round.
type ConfigError struct {
	Program  string // names the configuration in the message, e.g. "consumer"
	Problems []Problem
}

// Problem is one bad or missing variable.
type Problem struct {
	Var    string
	Reason string
}

func (e *ConfigError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Var + ": " + p.Reason
	}
	return e.Program + " configuration: " + strings.Join(parts, "; ")
}

// Unwrap makes errors.Is(err, ErrConfig) true.
func (e *ConfigError) Unwrap() error { return ErrConfig }

// Vars returns the names of the variables with a problem, sorted.
func (e *ConfigError) Vars() []string {
	vars := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		vars[i] = p.Var
	}
	slices.Sort(vars)
	return vars
}

// Env reads environment variables and collects their problems instead of
// stopping at the first. Every method returns a usable value (the default
// when the variable is bad), so that reading goes on and reports the rest.
// The runtime reads its own variables with it and hands it to the effect's
// Setup (Runtime.Env), so the effect's problems are reported with the
// runtime's. It is not safe for concurrent use.
type Env struct {
	getenv   func(string) string
	problems []Problem
}

// NewEnv returns an Env reading with getenv: os.Getenv, or a map lookup in
// tests.
func NewEnv(getenv func(string) string) *Env {
	return &Env{getenv: getenv}
}

// Fail records a problem with variable name, for checks that span several
// variables.
func (e *Env) Fail(name, format string, args ...any) {
	e.problems = append(e.problems, Problem{Var: name, Reason: fmt.Sprintf(format, args...)})
}

// Err is nil if nothing failed, else a *ConfigError for program listing
// every problem in the order found.
func (e *Env) Err(program string) error {
	if len(e.problems) == 0 {
		return nil
	}
	return &ConfigError{Program: program, Problems: slices.Clone(e.problems)}
}

func (e *Env) get(name string) string {
	return strings.TrimSpace(e.getenv(name))
}

// Required is the value of name, which must be set.
func (e *Env) Required(name string) string {
	v := e.get(name)
	if v == "" {
		e.Fail(name, "required")
	}
	return v
}

// String is the value of name, or def if it is unset.
func (e *Env) String(name, def string) string {
	if v := e.get(name); v != "" {
		return v
	}
	return def
}

// OneOf is the value of name, which must be one of values exactly, or def
// if it is unset.
func (e *Env) OneOf(name, def string, values ...string) string {
	v := e.String(name, def)
	if !slices.Contains(values, v) {
		e.Fail(name, "%q is not one of %s", v, strings.Join(values, ", "))
		return def
	}
	return v
}

// List splits the value of name at commas, dropping blank items; nil if
// there are none.
func (e *Env) List(name string) []string {
	var items []string
	for s := range strings.SplitSeq(e.getenv(name), ",") {
		if s = strings.TrimSpace(s); s != "" {
			items = append(items, s)
		}
	}
	return items
}

// Duration is the positive Go duration in name, or def if it is unset.
func (e *Env) Duration(name string, def time.Duration) time.Duration {
	v := e.get(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		e.Fail(name, "%q is not a positive Go duration such as 90s or 168h", v)
		return def
	}
	return d
}

// Int is the integer of at least min in name, or def if it is unset.
func (e *Env) Int(name string, def, min int) int {
	v := e.get(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min {
		e.Fail(name, "%q is not an integer >= %d", v, min)
		return def
	}
	return n
}

// Bool is the boolean in name, false if it is unset.
func (e *Env) Bool(name string) bool {
	v := e.get(name)
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		e.Fail(name, "%q is not a boolean (true or false)", v)
	}
	return b
}

// Level is the slog level in name, or in def if it is unset.
func (e *Env) Level(name, def string) slog.Level {
	v := e.String(name, def)
	var l slog.Level
	if err := l.UnmarshalText([]byte(v)); err != nil {
		e.Fail(name, "%q is not one of DEBUG, INFO, WARN, ERROR", v)
		return slog.LevelInfo
	}
	return l
}

// HTTPURL is the absolute http(s) URL in name, "" if it is unset. A bad
// value is reported and returned as it is: there is no default to fall
// back to.
func (e *Env) HTTPURL(name string) string {
	v := e.get(name)
	if v != "" && !IsHTTPURL(v) {
		e.Fail(name, "%q is not an absolute http(s) URL", v)
	}
	return v
}

// IsHTTPURL reports whether v is an absolute http or https URL with a
// host: the rule of Env.HTTPURL, for a CDK app to check the same value at
// synth time.
func IsHTTPURL(v string) bool {
	u, err := url.Parse(v)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}
