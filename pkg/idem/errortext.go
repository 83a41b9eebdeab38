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
// without its text, which may carry business identifiers. It is "panic" for
// a panicking effect, the text of context.DeadlineExceeded and
// context.Canceled, and otherwise the types of the errors err wraps at the
// bottom of its chain, e.g. "*net.OpError" or "*smtp.Error, *errors.errorString".
func ErrorClass(err error) string {
	var p panicError
	switch {
	case err == nil:
		return ""
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
