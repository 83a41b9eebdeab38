//go:build sqsidem_faults

package consumer

// The fault switches (faultnames.go), compiled only with the build tag
// sqsidem_faults. Everything is inert unless a FAULT_* variable is set.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// ErrInjected is the error of an injected effect failure.
var ErrInjected = errors.New("consumer: injected fault")

// faults are the switches, read with the configuration: a bad one stops
// the instance like any bad variable.
type faults struct {
	hookURL     string
	failKeys    []string
	failTimes   int
	poison      []string
	noReconcile bool
	fromMessage bool // EnvFaultFromMessage: faultmessage.go
}

func readFaults(e *Env) faults {
	return faults{
		hookURL:     e.HTTPURL(EnvFaultHookURL),
		failKeys:    e.List(EnvFaultFailKeys),
		failTimes:   e.Int(EnvFaultFailTimes, 1, 0),
		poison:      e.List(EnvFaultPoisonKeys),
		noReconcile: e.OneOf(EnvFaultNoReconcile, "false", "true", "false") == "true",
		fromMessage: e.OneOf(EnvFaultFromMessage, "false", "true", "false") == "true",
	}
}

// wrap returns eff with the switched-on faults around its functions, eff
// itself if none is on.
func (f faults) wrap(eff Effect, log *slog.Logger) Effect {
	if f.noReconcile {
		eff.Reconcile = nil
	}
	if f.hookURL == "" && len(f.failKeys) == 0 && len(f.poison) == 0 && !f.fromMessage {
		return eff
	}
	w := &faulty{faults: f, client: &http.Client{}, log: log, calls: map[string]int{}, received: map[string]bool{}}
	if next := eff.Lease; next != nil {
		eff.Lease = func(ctx context.Context, key string, msg events.SQSMessage) ([]byte, error) {
			return around(ctx, w, key, msg, func() ([]byte, error) { return next(ctx, key, msg) })
		}
	}
	if next := eff.Tx; next != nil {
		eff.Tx = func(ctx context.Context, key string, msg events.SQSMessage) (idem.TxEffect, error) {
			return around(ctx, w, key, msg, func() (idem.TxEffect, error) { return next(ctx, key, msg) })
		}
	}
	return eff
}

// around runs the effect between the hook's two points, unless a fault
// fails it first or the message's crash ends the process at one of them.
// In transactional mode the points are around computing the writes, which
// are committed after FaultAfterEffect.
func around[T any](ctx context.Context, w *faulty, key string, msg events.SQSMessage, effect func() (T, error)) (T, error) {
	var zero T
	crashAt := w.crashPoint(ctx, key, msg)
	w.hook(ctx, FaultBeforeEffect, key)
	if crashAt == FaultCrashBefore {
		crash(crashAt, key)
	}
	if err := w.injected(ctx, key, msg); err != nil {
		return zero, err
	}
	v, err := effect()
	if err == nil {
		w.hook(ctx, FaultAfterEffect, key)
		if crashAt == FaultCrashAfter {
			crash(crashAt, key)
		}
	}
	return v, err
}

type faulty struct {
	faults
	client *http.Client
	log    *slog.Logger

	mu       sync.Mutex
	calls    map[string]int  // per key, when neither a lease nor a receive count says
	received map[string]bool // keys received, when no receive count says (firstReceive)
}

// hook calls the harness at point. Its answer does not matter: what
// matters is that the harness may kill or freeze the process meanwhile.
func (w *faulty) hook(ctx context.Context, point, key string) {
	if w.hookURL == "" {
		return
	}
	u, err := url.Parse(w.hookURL)
	if err != nil {
		return // validated by readFaults
	}
	q := u.Query()
	q.Set("point", point)
	q.Set("key", key)
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		q.Set(FaultHookRequestID, lc.AwsRequestID)
	}
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		return
	}
	resp, err := w.client.Do(req)
	if err != nil {
		// A *url.Error quotes the URL, which holds the key: log the cause.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		w.logger(ctx).DebugContext(ctx, "fault hook", slog.String("point", point), slog.String("error", err.Error()))
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		w.logger(ctx).DebugContext(ctx, "fault hook", slog.String("point", point), slog.Int("status", resp.StatusCode))
	}
}

// injected is the injected failure of the effect for key, if any. Its text
// names no key.
func (w *faulty) injected(ctx context.Context, key string, msg events.SQSMessage) error {
	if w.messageFault(msg) == FaultPoison {
		// Nothing took place: a definite failure, so that no later receive
		// takes over an unknown outcome (Reconcile, IDEM_UNKNOWN_OUTCOME)
		// and every receive counts Failed, whatever the policy.
		return idem.Definite(fmt.Errorf("%w: poison message fails every time", ErrInjected))
	}
	if slices.Contains(w.poison, key) {
		return fmt.Errorf("%w: poison key fails every time", ErrInjected)
	}
	if !slices.Contains(w.failKeys, key) {
		return nil
	}
	if attempt := w.attempt(ctx, key, msg); attempt <= w.failTimes {
		return fmt.Errorf("%w: transient failure, attempt %d of %d failing", ErrInjected, attempt, w.failTimes)
	}
	return nil
}

// attempt is the Guard's attempt count in lease mode. Transactional mode
// has no lease: there it is the message's receive count, the same on every
// instance, else the calls of this process.
func (w *faulty) attempt(ctx context.Context, key string, msg events.SQSMessage) int {
	if l, ok := idem.LeaseFromContext(ctx); ok {
		return l.Attempt
	}
	if n, err := strconv.Atoi(msg.Attributes["ApproximateReceiveCount"]); err == nil && n > 0 {
		return n
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls[key]++
	return w.calls[key]
}

// logger is w's logger with the request id of ctx's invocation, as the
// Handler's lines carry it: several invocations may share the process.
func (w *faulty) logger(ctx context.Context) *slog.Logger {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		return w.log.With(slog.String(attrRequestID, lc.AwsRequestID))
	}
	return w.log
}
