package main

// Fault injection for the integration suite: a wrapper around the Effect,
// put there by the one line of main.go marked FAULTS. Nothing else calls
// into this file, and it reads its FAULT_* variables itself. Everything is
// inert unless a FAULT_* variable is set; the stack sets none, and with none
// set the effect is not wrapped at all.
//
// A fork deletes this file and the line marked FAULTS in main.go.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"sync"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/functions/internal/envconfig"
	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// ErrInjected is the error of an injected effect failure.
var ErrInjected = errors.New("consumer: injected fault")

// The points at which the hook is called (integration/internal/chaos).
const (
	pointBeforeEffect = "before-effect"
	pointAfterEffect  = "after-effect"
)

// Faults are the fault switches.
type Faults struct {
	// HookURL (FAULT_HOOK_URL) is POSTed ?point=before-effect&key=… right
	// before the effect and ?point=after-effect&key=… right after it
	// succeeded, before the receipt is written (in transactional mode:
	// before the writes are computed, after they are returned). The harness
	// may SIGKILL or SIGSTOP the process instead of answering.
	HookURL string
	// FailKeys (FAULT_EFFECT_FAIL_KEYS, comma-separated order ids) make the
	// effect fail transiently on their first FailTimes attempts
	// (FAULT_EFFECT_FAIL_TIMES, default 1).
	FailKeys  map[string]bool
	FailTimes int
	// Poison (FAULT_POISON=true) makes every order whose body has
	// "poison": true fail, every time: a message that can only end in the
	// dead-letter queue.
	Poison bool
}

// withFaults is main's one line of fault wiring: effect wrapped in the
// switches of the environment. Only the integration suite sets them, so a
// bad one stops the process, as a bad configuration does.
func withFaults(effect Effect, client *http.Client, log *slog.Logger) Effect {
	f, err := loadFaults(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	return f.wrap(effect, client, log)
}

// loadFaults reads the switches with getenv. The error is an
// *envconfig.Error naming every bad variable.
func loadFaults(getenv func(string) string) (Faults, error) {
	e := envconfig.NewReader(getenv)
	f := Faults{
		HookURL:   e.Valid("FAULT_HOOK_URL", contract.IsHTTPURL, "an absolute http(s) URL"),
		FailTimes: e.Int("FAULT_EFFECT_FAIL_TIMES", 1, 0),
		Poison:    e.Bool("FAULT_POISON"),
	}
	for _, k := range e.List("FAULT_EFFECT_FAIL_KEYS") {
		if f.FailKeys == nil {
			f.FailKeys = make(map[string]bool)
		}
		f.FailKeys[k] = true
	}
	return f, e.Err("consumer faults")
}

// wrap returns next with the switched-on faults around it, next itself if
// none is on. client calls the hook.
func (f Faults) wrap(next Effect, client *http.Client, log *slog.Logger) Effect {
	if f.HookURL == "" && len(f.FailKeys) == 0 && !f.Poison {
		return next
	}
	return &faultyEffect{Faults: f, next: next, client: client, log: log, calls: make(map[string]int)}
}

// faultyEffect is an Effect with the faults around next.
type faultyEffect struct {
	Faults
	next   Effect
	client *http.Client
	log    *slog.Logger

	mu    sync.Mutex
	calls map[string]int // per key, when the context carries no lease (tx mode)
}

func (f *faultyEffect) Issue(ctx context.Context, key string, msg events.SQSMessage) ([]byte, error) {
	f.hook(ctx, pointBeforeEffect, key)
	if err := f.injected(ctx, key, msg.Body); err != nil {
		return nil, err
	}
	result, err := f.next.Issue(ctx, key, msg)
	if err == nil {
		f.hook(ctx, pointAfterEffect, key)
	}
	return result, err
}

func (f *faultyEffect) IssueTx(ctx context.Context, key string, msg events.SQSMessage) (idem.TxEffect, error) {
	f.hook(ctx, pointBeforeEffect, key)
	if err := f.injected(ctx, key, msg.Body); err != nil {
		return idem.TxEffect{}, err
	}
	tx, err := f.next.IssueTx(ctx, key, msg)
	if err == nil {
		f.hook(ctx, pointAfterEffect, key)
	}
	return tx, err
}

// hook calls the harness at point. Its answer does not matter: what matters
// is that the harness may kill or freeze the process while we wait.
func (f *faultyEffect) hook(ctx context.Context, point, key string) {
	if f.HookURL == "" {
		return
	}
	u, err := url.Parse(f.HookURL)
	if err != nil {
		return // validated by loadFaults
	}
	q := u.Query()
	q.Set("point", point)
	q.Set("key", key)
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		return
	}
	resp, err := f.client.Do(req)
	if err != nil {
		// A *url.Error quotes the URL, which holds the order id: log the
		// cause only.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		f.log.DebugContext(ctx, "fault hook", slog.String("point", point), slog.String("error", err.Error()))
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		f.log.DebugContext(ctx, "fault hook", slog.String("point", point), slog.Int("status", resp.StatusCode))
	}
}

// injected returns the injected failure of the effect for key, if any. Its
// text names no order id.
func (f *faultyEffect) injected(ctx context.Context, key, body string) error {
	var p struct {
		Poison bool `json:"poison"`
	}
	if f.Poison && json.Unmarshal([]byte(body), &p) == nil && p.Poison {
		return fmt.Errorf("%w: poison order fails every time", ErrInjected)
	}
	if !f.FailKeys[key] {
		return nil
	}
	if attempt := f.attempt(ctx, key); attempt <= f.FailTimes {
		return fmt.Errorf("%w: transient failure, attempt %d of %d failing", ErrInjected, attempt, f.FailTimes)
	}
	return nil
}

// attempt is the Guard's attempt count in lease mode; transactional mode has
// no lease, so it counts the calls of this process instead.
func (f *faultyEffect) attempt(ctx context.Context, key string) int {
	if l, ok := idem.LeaseFromContext(ctx); ok {
		return l.Attempt
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[key]++
	return f.calls[key]
}
