package main

import (
	"errors"
	"fmt"
	"strings"
)

// Exit codes (doc.go): 0 done, 1 something found wrong while talking to
// AWS — a key without a record included — or a write refused, 2 the
// command line itself is wrong. Nothing is written when either is
// returned before a write.
const (
	exitOK      = 0
	exitRuntime = 1
	exitUsage   = 2
)

// Errors a test, or a caller of run, branches on. Each is one line on
// stderr; the exit code is exitRuntime unless it wraps errUsage.
var (
	// errUsage marks a mistake in the command line (exit 2).
	errUsage = errors.New("usage")
	// errNotFound: an unknown stack, table, queue or key.
	errNotFound = errors.New("not found")
	// errNotReceiptTable: the table's key schema or items are not those of
	// a dynamostore receipt table.
	errNotReceiptTable = errors.New("not a receipt table")
	// errNotQueue: a URL that names no SQS queue, or not the queue expected.
	errNotQueue = errors.New("not a queue")
	// errNoCredentials: the SDK's default chain found no credentials.
	errNoCredentials = errors.New("no AWS credentials")
	// errChanged: the record changed between resolve's read and its write;
	// nothing was written.
	errChanged = errors.New("the record changed since it was read")
	// errRefused: resolve will not write what was asked (a live lease, a
	// receipt to undo, an expired record).
	errRefused = errors.New("refused")
	// errAborted: the operator answered no; nothing was written.
	errAborted = errors.New("aborted")
	// errIncomplete: a redrive left some of its moves or deletes undone.
	errIncomplete = errors.New("incomplete")
)

// usagef returns a usage error (exit 2).
func usagef(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

// exitCode maps err to the process's exit code.
func exitCode(err error) int {
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errUsage):
		return exitUsage
	}
	return exitRuntime
}

// oneLine is err as the single line an operator reads: joined errors
// (errors.Join) become "; "-separated, and the "usage: " marker is noise.
func oneLine(err error) string {
	var parts []string
	for _, line := range strings.Split(strings.TrimPrefix(err.Error(), errUsage.Error()+": "), "\n") {
		if line = strings.Join(strings.Fields(line), " "); line != "" {
			parts = append(parts, line)
		}
	}
	return strings.Join(parts, "; ")
}

// cause is the innermost error of err's chain: what an SDK error, several
// layers deep, comes down to ("connection refused", "AccessDenied: ...").
func cause(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}
