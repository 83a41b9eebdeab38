package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"

	smithy "github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// The failures of the transport a remote call (or a reconcile) meets, as
// the clients a user's effect calls return them: net/http (an *url.Error
// around what broke), the AWS SDK (a *smithy.OperationError around a
// RequestSendError), or a client that wraps the bare error. Which wrapper,
// and which error of its class, is the verdict's variant: the Guard must
// read every shape alike.
//
// What the world knows and the effect does not: whether the request left.
// A connection that broke after it was made (closed, aborted, reset, a
// reply cut short) may have delivered the request; a dial that failed or a
// name that did not resolve cannot have (idem.NotSent).

// broken is the class of a failure after the connection was made.
type broken int

const (
	brokenClosed   broken = iota // a read on a connection closed under it: net.ErrClosed
	brokenAborted                // ECONNABORTED
	brokenReset                  // ECONNRESET
	brokenCutShort               // the reply cut short: io.ErrUnexpectedEOF, io.EOF
	nBroken
)

var brokenNames = [...]string{"closed", "aborted", "reset", "cut short"}

// remoteURL is what the remote calls are sent to.
const remoteURL = "https://remote.example/v1/effects"

// brokenError is a failure of class b after the request may have left,
// in the shape variant picks.
func brokenError(b broken, variant int) error {
	var inner error // what the socket said
	switch b {
	case brokenClosed:
		inner = net.ErrClosed
	case brokenAborted:
		inner = syscall.ECONNABORTED
	case brokenReset:
		inner = syscall.ECONNRESET
	default:
		inner = io.ErrUnexpectedEOF
		if variant%2 == 1 {
			inner = io.EOF
		}
	}
	op := inner
	if b != brokenCutShort && variant%3 != 0 {
		// As net returns it: an *net.OpError, the errno in an
		// *os.SyscallError.
		err := inner
		if b != brokenClosed {
			err = os.NewSyscallError("read", inner)
		}
		op = &net.OpError{Op: "read", Net: "tcp", Addr: remoteAddr, Err: err}
	}
	return wrapped(op, variant/3)
}

// notSentError is a request that never left: a refused dial or a name that
// did not resolve, in the shape variant picks.
func notSentError(variant int) error {
	var op error
	switch variant % 3 {
	case 0:
		op = &net.OpError{Op: "dial", Net: "tcp", Addr: remoteAddr, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	case 1:
		op = &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "remote.example", IsNotFound: true}}
	default:
		op = &net.DNSError{Err: "server misbehaving", Name: "remote.example", IsTemporary: true}
	}
	return wrapped(op, variant/3)
}

// wrapped is err as a client returns it: 0 bare behind a message, 1
// net/http's, 2 the AWS SDK's.
func wrapped(err error, shape int) error {
	switch shape % 3 {
	case 1:
		return &url.Error{Op: "Post", URL: remoteURL, Err: err}
	case 2:
		return &smithy.OperationError{ServiceID: "Remote", OperationName: "Send", Err: &smithyhttp.RequestSendError{Err: err}}
	}
	return fmt.Errorf("sim: the remote call: %w", err)
}

// endedError is what a call returns once ctx has ended, in the shape
// variant picks: the context's error, its cause behind a message (a
// worker's shutdown carries one), or net/http's, which wraps the cause
// alone.
func endedError(ctx context.Context, variant int) error {
	switch variant % 3 {
	case 1:
		return fmt.Errorf("sim: the remote call: %w", context.Cause(ctx))
	case 2:
		return &url.Error{Op: "Post", URL: remoteURL, Err: context.Cause(ctx)}
	}
	return ctx.Err()
}

// The causes the world's contexts are given: net/http returns them, and
// they wrap neither context.DeadlineExceeded nor a timeout.
var (
	errCallDeadline = errors.New("sim: the remote call's own deadline passed")
	errShutdown     = errors.New("sim: the worker shuts down")
)

// mark is err marked Definite, by a careless client (the mark on the whole
// error, or inside it, where errors.As finds it all the same).
func mark(err error, variant int) error {
	if variant%2 == 0 {
		return idem.Definite(err)
	}
	return fmt.Errorf("sim: the remote client gives up: %w", idem.Definite(err))
}

var remoteAddr = &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 443}
