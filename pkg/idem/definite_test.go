package idem_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

// realErrors makes the errors a client really gets when a connection
// breaks after the request may have been written, each by doing it on
// loopback.
func realErrors(t *testing.T) map[string]error {
	t.Helper()
	errs := map[string]error{}

	// The server reads the request, then drops the connection.
	drop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(drop.Close)
	_, errs["connection dropped after the request"] = http.Post(drop.URL, "text/plain", nil)

	// The server answers half a body and goes away.
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "100")
		_, _ = w.Write([]byte("partial"))
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(cut.Close)
	if resp, err := http.Post(cut.URL, "text/plain", nil); err != nil {
		errs["reply cut short"] = err
	} else {
		_, errs["reply cut short"] = io.ReadAll(resp.Body)
		resp.Body.Close()
	}

	// A deadline given a cause: net/http returns the cause, which wraps
	// neither context.DeadlineExceeded nor a timeout.
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	t.Cleanup(slow.Close)
	ctx, cancel := context.WithTimeoutCause(context.Background(), 50*time.Millisecond, errors.New("the partner took too long"))
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, slow.URL, nil)
	_, errs["deadline with a cause"] = http.DefaultClient.Do(req)

	// A read on a connection closed under it.
	a, b := net.Pipe()
	b.Close()
	_, errs["pipe closed"] = a.Write([]byte("x"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	_, errs["read on a closed connection"] = conn.Read(make([]byte, 1))

	errs["connection aborted"] = &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNABORTED)}
	errs["reset"] = fmt.Errorf("sms: %w", syscall.ECONNRESET)
	errs["deadline"] = context.DeadlineExceeded
	errs["cancelled"] = fmt.Errorf("post: %w", context.Canceled)
	errs["unexpected EOF"] = io.ErrUnexpectedEOF
	errs["closed pipe"] = io.ErrClosedPipe
	errs["a refused dial joined with a reset"] = errors.Join(
		&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, syscall.ECONNRESET)
	for name, err := range errs {
		if err == nil {
			t.Fatalf("%s: no error", name)
		}
	}
	return errs
}

// TestTransportFailuresAreNeverDefinite: whatever an effect marks, a
// failure after which the request may have been applied is not definite
// (found from outside: net.ErrClosed, ECONNABORTED, io.ErrClosedPipe and
// a deadline given a cause were read as definite).
func TestTransportFailuresAreNeverDefinite(t *testing.T) {
	for name, err := range realErrors(t) {
		if idem.IsDefinite(idem.Definite(err)) {
			t.Errorf("%s (%v, %T): marked Definite, read as definite", name, err, err)
		}
		if idem.NotSent(err) {
			t.Errorf("%s (%v): NotSent", name, err)
		}
	}
	if idem.IsDefinite(errors.New("plain")) {
		t.Error("an unmarked error is definite")
	}
	if !idem.IsDefinite(fmt.Errorf("sms: %w", idem.Definite(errors.New("400 invalid number")))) {
		t.Error("a wrapped Definite refusal is not definite")
	}
}

// TestNotSent: a refused dial and a name that does not resolve never left,
// and may be marked definite.
func TestNotSent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: the dial is refused
	_, refused := http.Post("http://"+addr+"/effects", "text/plain", nil)
	for name, err := range map[string]error{
		"refused dial":   refused,
		"no such host":   &url.Error{Op: "Post", URL: "https://psp.invalid", Err: &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "psp.invalid", IsNotFound: true}}},
		"dial timed out": fmt.Errorf("capture: %w", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ETIMEDOUT)}),
	} {
		if !idem.NotSent(err) {
			t.Errorf("%s (%v): not NotSent", name, err)
		}
		if !idem.IsDefinite(idem.Definite(err)) {
			t.Errorf("%s (%v): marked Definite, not definite", name, err)
		}
	}
	for name, err := range map[string]error{
		"no transport failure": errors.New("422 invalid amount"),
		"nil":                  nil,
		"an HTTP cause":        &url.Error{Op: "Post", URL: "https://psp.example", Err: errors.New("the partner took too long")},
	} {
		if idem.NotSent(err) {
			t.Errorf("%s: NotSent", name)
		}
	}
}

// TestDefiniteAfterTheDeadline: an error the effect returns once its
// context has ended is not definite, whatever it is marked and whatever
// it wraps: the request may have been sent.
func TestDefiniteAfterTheDeadline(t *testing.T) {
	store := idemtest.NewMemoryStore()
	g := mustGuard(t, store, idem.WithLease(300*time.Millisecond), idem.WithSafetyMargin(100*time.Millisecond))
	_, err := g.Do(context.Background(), "k", nil, func(ctx context.Context) ([]byte, error) {
		<-ctx.Done()
		return nil, idem.Definite(errors.New("the partner took too long"))
	})
	if err == nil {
		t.Fatal("no error")
	}
	if rec, _, _ := store.Get(context.Background(), g.StorageKey("k")); rec.Status != idem.StatusUnknown {
		t.Fatalf("record %s after a Definite error past the deadline; want UNKNOWN", rec.Status)
	}
}

// TestNotSentAfterTheDeadline: once the context has ended, a definite
// error is trusted only with proof that the request never left
// (ErrNotSent); a failure of the transport beside the proof outweighs it.
func TestNotSentAfterTheDeadline(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  func(ctx context.Context) error
		want idem.Status
	}{
		{"never handed to a transport", func(ctx context.Context) error {
			return fmt.Errorf("still queued: %w (%v)", idem.ErrNotSent, ctx.Err())
		}, idem.StatusFailed},
		{"the proof beside the deadline's own error", func(ctx context.Context) error {
			return fmt.Errorf("%w: %w", idem.ErrNotSent, ctx.Err())
		}, idem.StatusUnknown},
		{"the proof without the Definite mark", func(ctx context.Context) error {
			return idem.ErrNotSent
		}, idem.StatusUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := idemtest.NewMemoryStore()
			g := mustGuard(t, store, idem.WithLease(300*time.Millisecond), idem.WithSafetyMargin(100*time.Millisecond))
			_, err := g.Do(context.Background(), "k", nil, func(ctx context.Context) ([]byte, error) {
				<-ctx.Done()
				e := tc.err(ctx)
				if tc.name != "the proof without the Definite mark" {
					e = idem.Definite(e)
				}
				return nil, e
			})
			if !errors.Is(err, idem.ErrNotSent) {
				t.Fatalf("err %v, want it to wrap ErrNotSent", err)
			}
			if rec, _, _ := store.Get(context.Background(), g.StorageKey("k")); rec.Status != tc.want {
				t.Fatalf("record %s, want %s", rec.Status, tc.want)
			}
		})
	}
}

// TestReconcileUsesUpTheTime: a reconcile that answers only once the
// effect's context has ended leaves no time for the effect: it does not
// start, the call is Failed with the context's error, and the record
// stays UNKNOWN for the next attempt to ask again (found from outside:
// the effect ran with an ended context).
func TestReconcileUsesUpTheTime(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func() (bool, []byte, error)
	}{
		{"not applied, late", func() (bool, []byte, error) { return false, nil, nil }},
		{"cannot tell, late, Retry", func() (bool, []byte, error) { return false, nil, errors.New("lookup timed out") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := idemtest.NewMemoryStore()
			g := mustGuard(t, store, idem.WithLease(300*time.Millisecond), idem.WithSafetyMargin(100*time.Millisecond))
			runs := 0
			effect := failOnce(errTimeout, &runs)
			_, _ = g.Do(context.Background(), "k", nil, effect)
			late := idem.Reconcile(func(ctx context.Context) (bool, []byte, error) {
				<-ctx.Done()
				return tc.answer()
			})
			res, err := g.Do(context.Background(), "k", nil, func(ctx context.Context) ([]byte, error) {
				if ctx.Err() != nil {
					t.Error("the effect started with an ended context")
				}
				return effect(ctx)
			}, late)
			if res.Outcome != idem.Failed || !errors.Is(err, context.DeadlineExceeded) || runs != 1 {
				t.Fatalf("%+v, %v, runs %d; want Failed wrapping context.DeadlineExceeded, the effect not run again", res, err, runs)
			}
			if rec, _, _ := store.Get(context.Background(), g.StorageKey("k")); rec.Status != idem.StatusUnknown {
				t.Fatalf("record %s; want UNKNOWN", rec.Status)
			}
		})
	}
}
