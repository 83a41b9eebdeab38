package idem

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
)

// Definite marks err as a definite failure: the effect did not take place
// (the remote system refused the request: a 4xx answer, a validation
// error; or the request never left, see NotSent). The record is released
// FAILED and the next delivery runs the effect without reconciling.
//
// The mark is not trusted against what the error itself shows. An error
// that holds a failure of the transport is never definite, whatever it is
// marked, unless that failure is one NotSent recognises: a failure of the
// transport is an error that is, or wraps, the end of a context (the
// effect's own deadline included, whatever cause it was given), an
// *url.Error (a failed HTTP round trip), a net.Error (a *net.OpError, a
// syscall.Errno such as ECONNRESET or ECONNABORTED, a closed connection),
// io.EOF, io.ErrUnexpectedEOF, io.ErrClosedPipe or os.ErrDeadlineExceeded.
// And a Guard reads no error as definite that the effect returned after its
// context had ended (the error may be the deadline's, whatever it carries),
// unless NotSent proves the request never left: wrap ErrNotSent in an error
// for a request the effect knows it never handed to a transport. The error
// returned wraps err and reads as err does.
func Definite(err error) error {
	if err == nil {
		return nil
	}
	return &definiteError{err}
}

type definiteError struct{ err error }

func (d *definiteError) Error() string { return d.err.Error() }
func (d *definiteError) Unwrap() error { return d.err }

// IsDefinite reports whether err is a definite failure: marked with
// Definite, and holding no failure of the transport but one that NotSent
// recognises (see Definite).
func IsDefinite(err error) bool {
	var d *definiteError
	return errors.As(err, &d) && sentOf(err) != maybeSent
}

// ErrNotSent is wrapped by an effect's error to state that the request
// never left this process: the effect never handed it to a transport (it
// was still queued, or no time was left to start the call). NotSent
// reports it; a failure of the transport anywhere in the same error
// outweighs it.
var ErrNotSent = errors.New("idem: the request was not sent")

// NotSent reports whether err proves that a request never left this
// process: it wraps ErrNotSent, or its failures of the transport (see
// Definite) are all a name that did not resolve (*net.DNSError) or a
// connection that could not be made (a *net.OpError of a dial: refused,
// unreachable, or timed out before it was established), as an *url.Error
// or the AWS SDK wrap them.
// Nothing of such a request can have been applied, so an effect may mark
// it Definite:
//
//	if idem.NotSent(err) {
//		return nil, idem.Definite(err)
//	}
//
// Anything after a connection was made — a reset, a connection closed or
// aborted, a reply cut short, a deadline, a timeout — may come after the
// request was written, and is not NotSent. Nor is an error without any
// failure of the transport: it says nothing of where the request went.
func NotSent(err error) bool { return sentOf(err) == neverSent }

// sent is what an error shows of where a request went.
type sent int

const (
	noTransport sent = iota // no failure of the transport
	neverSent               // only failures before the request left
	maybeSent               // a failure after which it may have been applied
)

// sentOf walks err's tree: a failure that may have come after the request
// left, anywhere in it, outweighs any that came before.
func sentOf(err error) sent {
	if err == nil {
		return noTransport
	}
	var dns *net.DNSError
	var op *net.OpError
	var ue *url.Error
	var ne net.Error
	switch {
	case err == ErrNotSent, asSelf(err, &dns):
		return neverSent
	case asSelf(err, &op):
		if op.Op == "dial" {
			return neverSent
		}
		return maybeSent
	case asSelf(err, &ue):
		// A failed round trip: it never left only if what it wraps says so
		// (a dial, a name); a deadline given a cause wraps the cause alone.
		if sentOf(ue.Err) == neverSent {
			return neverSent
		}
		return maybeSent
	case isTransportSentinel(err), asSelf(err, &ne):
		return maybeSent
	}
	var children []error
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		children = []error{u.Unwrap()}
	case interface{ Unwrap() []error }:
		children = u.Unwrap()
	}
	worst := noTransport
	for _, c := range children {
		worst = max(worst, sentOf(c))
	}
	return worst
}

// asSelf is errors.As on err itself, not its chain: sentOf walks the
// chain so that every branch of a joined error counts.
func asSelf[T error](err error, target *T) bool {
	t, ok := err.(T)
	if ok {
		*target = t
	}
	return ok
}

// isTransportSentinel reports the sentinel errors of a transport that
// broke or ended, compared as errors.Is compares one link.
func isTransportSentinel(err error) bool {
	for _, s := range []error{context.Canceled, context.DeadlineExceeded, os.ErrDeadlineExceeded,
		io.EOF, io.ErrUnexpectedEOF, io.ErrClosedPipe, net.ErrClosed} {
		if err == s {
			return true
		}
		if is, ok := err.(interface{ Is(error) bool }); ok && is.Is(s) {
			return true
		}
	}
	return false
}
