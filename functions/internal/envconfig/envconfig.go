// Package envconfig reads a Lambda function's configuration from environment
// variables. A Reader does not stop at the first bad variable: it collects
// every problem, so that a deployment is fixed in one round.
//
// It knows no variable names: those, their defaults and their rules are in
// functions/contract, whose LoadConsumer and LoadProducer use a Reader.
package envconfig

import (
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Error lists every problem found in the environment at once.
type Error struct {
	Program  string // names the configuration in the message, e.g. "consumer"
	Problems []Problem
}

// Problem is one bad or missing environment variable.
type Problem struct {
	Var    string
	Reason string
}

func (e *Error) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Var + ": " + p.Reason
	}
	return e.Program + " configuration: " + strings.Join(parts, "; ")
}

// Vars returns the names of the variables with a problem, sorted.
func (e *Error) Vars() []string {
	vars := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		vars[i] = p.Var
	}
	slices.Sort(vars)
	return vars
}

// Reader reads variables and collects their problems. Every method returns
// a usable value (the default when the variable is bad) so that reading can
// go on and report the remaining problems too.
type Reader struct {
	getenv   func(string) string
	problems []Problem
}

// NewReader returns a Reader that reads with getenv; main passes os.Getenv,
// tests pass a map lookup.
func NewReader(getenv func(string) string) *Reader {
	return &Reader{getenv: getenv}
}

// Fail records a problem with variable name; callers use it for the checks
// that span several variables.
func (r *Reader) Fail(name, format string, args ...any) {
	r.problems = append(r.problems, Problem{Var: name, Reason: fmt.Sprintf(format, args...)})
}

// Err is nil if nothing failed, else an *Error for program listing every
// problem in the order found.
func (r *Reader) Err(program string) error {
	if len(r.problems) == 0 {
		return nil
	}
	return &Error{Program: program, Problems: r.problems}
}

func (r *Reader) get(name string) string {
	return strings.TrimSpace(r.getenv(name))
}

// Required is the value of name, which must be set.
func (r *Reader) Required(name string) string {
	v := r.get(name)
	if v == "" {
		r.Fail(name, "required")
	}
	return v
}

// String is the value of name, or def if it is unset.
func (r *Reader) String(name, def string) string {
	if v := r.get(name); v != "" {
		return v
	}
	return def
}

// List splits the value of name at commas, dropping blank items. It is nil
// if there are none.
func (r *Reader) List(name string) []string {
	var items []string
	for s := range strings.SplitSeq(r.getenv(name), ",") {
		if s = strings.TrimSpace(s); s != "" {
			items = append(items, s)
		}
	}
	return items
}

// Duration is the positive Go duration in name, or def if it is unset.
func (r *Reader) Duration(name string, def time.Duration) time.Duration {
	v := r.get(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		r.Fail(name, "%q is not a positive Go duration such as 90s or 168h", v)
		return def
	}
	return d
}

// Int is the integer of at least min in name, or def if it is unset.
func (r *Reader) Int(name string, def, min int) int {
	v := r.get(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min {
		r.Fail(name, "%q is not an integer >= %d", v, min)
		return def
	}
	return n
}

// Bool is the boolean in name, false if it is unset.
func (r *Reader) Bool(name string) bool {
	v := r.get(name)
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.Fail(name, "%q is not a boolean (true or false)", v)
	}
	return b
}

// Level is the slog level in name, or in def if it is unset.
func (r *Reader) Level(name, def string) slog.Level {
	v := r.String(name, def)
	var l slog.Level
	if err := l.UnmarshalText([]byte(v)); err != nil {
		r.Fail(name, "%q is not one of DEBUG, INFO, WARN, ERROR", v)
		return slog.LevelInfo
	}
	return l
}

// Valid is the value of name, "" if it is unset. A value that valid rejects
// is reported as not being what (e.g. "an absolute http(s) URL") but still
// returned: there is no sensible default for it.
func (r *Reader) Valid(name string, valid func(string) bool, what string) string {
	v := r.get(name)
	if v != "" && !valid(v) {
		r.Fail(name, "%q is not %s", v, what)
	}
	return v
}
