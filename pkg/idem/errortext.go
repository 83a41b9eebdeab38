package idem

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// ErrorClass is the default of WithErrorText: what kind of error err is,
// without its text, which may carry business identifiers. It is the class
// the effect gave its error with Classify, "panic" for a panicking effect,
// the text of context.DeadlineExceeded and context.Canceled, and otherwise
// the types of the errors err wraps at the bottom of its chain, e.g.
// "*net.OpError" or "*smtp.Error, *errors.errorString".
func ErrorClass(err error) string {
	var (
		p panicError
		c *classified
	)
	switch {
	case err == nil:
		return ""
	case errors.As(err, &c):
		return c.class
	case errors.As(err, &p):
		return "panic"
	case errors.Is(err, context.DeadlineExceeded):
		return context.DeadlineExceeded.Error()
	case errors.Is(err, context.Canceled):
		return context.Canceled.Error()
	}
	var types []string
	var walk func(error)
	walk = func(e error) {
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			if next := u.Unwrap(); next != nil {
				walk(next)
				return
			}
		case interface{ Unwrap() []error }:
			for _, next := range u.Unwrap() {
				walk(next)
			}
			return
		}
		if t := fmt.Sprintf("%T", e); !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	walk(err)
	return strings.Join(types, ", ")
}

// Classify names the class of an effect's error: the readable, stable
// text a FAILED record keeps as its last error (ErrorClass), which the
// operator sees in idemctl and the logs, e.g. Classify(err,
// "provider-timeout"). Keep business identifiers out of class: it is
// stored. The error returned wraps err (errors.Is and errors.As see
// through it) and reads as err does.
func Classify(err error, class string) error {
	if err == nil || class == "" {
		return err
	}
	return &classified{err: err, class: class}
}

type classified struct {
	err   error
	class string
}

func (c *classified) Error() string { return c.err.Error() }
func (c *classified) Unwrap() error { return c.err }

// panicError is the reason a panicking effect's record is released with.
type panicError struct{ value any }

func (p panicError) Error() string { return fmt.Sprintf("panic: %v", p.value) }

// storeError wraps a store's error with ErrStore, unless it is one of the
// outcomes a store reports on purpose.
func storeError(err error) error {
	for _, known := range []error{ErrStore, ErrInProgress, ErrLeaseLost, ErrInvalid} {
		if errors.Is(err, known) {
			return err
		}
	}
	return fmt.Errorf("%w: %w", ErrStore, err)
}

// cancelled returns ctx's error when the caller cancelled it: a call that
// has not run its effect then ends as Failed with the caller's own
// cancellation, never as a store outage (a deadline that passed first is
// the same: window reports it).
func cancelled(ctx context.Context) error {
	if err := ctx.Err(); errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// storeFailed is the outcome of a store request (op) that failed before
// the effect ran: the store's failure (ErrStore), one of the outcomes it
// reports on purpose, or — when the caller cancelled ctx meanwhile, which
// is what failed the request — the caller's cancellation (Failed): a
// cancelled caller is no outage, and must not count as one.
func (g *Guard) storeFailed(ctx context.Context, op, skey string, err error) (Result, error) {
	if cerr := cancelled(ctx); cerr != nil {
		// Not %w: whatever the store said, it said it to a caller that
		// had gone.
		return Result{Outcome: Failed}, fmt.Errorf("idem: %s %s: %w (the store: %v)", op, skey, cerr, err)
	}
	return Result{Outcome: storeOutcome(err)}, fmt.Errorf("idem: %s %s: %w", op, skey, storeError(err))
}

// storeOutcome maps a store's error before the effect ran to an outcome.
func storeOutcome(err error) Outcome {
	switch {
	case errors.Is(err, ErrInProgress):
		return InProgress
	case errors.Is(err, ErrInvalid):
		return Rejected
	default:
		return StoreError
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
