package main

// Fault injection for the integration harness. Everything here is inert
// unless its FAULT_* environment variable is set; the stack sets none. A
// fork deletes this file, the Faults field and loadFaults call in config.go,
// newFaults in handler.go and the calls to g.faults in effect.go.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync"

	"github.com/exactlyonce/sqsidem/functions/internal/envconfig"
	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// ErrInjected is the error of an injected effect failure.
var ErrInjected = errors.New("consumer: injected fault")

// Faults are the fault switches.
type Faults struct {
	// HookURL (FAULT_HOOK_URL) is POSTed ?point=before-effect&key=… right
	// before the effect and ?point=after-effect&key=… right after it, before
	// the receipt is written. The harness may SIGKILL the process instead of
	// answering.
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

func loadFaults(e *envconfig.Reader) Faults {
	f := Faults{
		HookURL:   e.HTTPURL("FAULT_HOOK_URL"),
		FailTimes: e.Int("FAULT_EFFECT_FAIL_TIMES", 1, 0),
		Poison:    e.Bool("FAULT_POISON"),
	}
	for _, k := range e.List("FAULT_EFFECT_FAIL_KEYS") {
		if f.FailKeys == nil {
			f.FailKeys = make(map[string]bool)
		}
		f.FailKeys[k] = true
	}
	return f
}

// faults applies Faults. The zero value and nil do nothing.
type faults struct {
	Faults
	client *http.Client
	log    *slog.Logger

	mu    sync.Mutex
	calls map[string]int // per key, when the context carries no lease (tx mode)
}

func newFaults(f Faults, client *http.Client, log *slog.Logger) *faults {
	return &faults{Faults: f, client: client, log: log, calls: make(map[string]int)}
}

// hook calls the harness at point. Its answer does not matter: what matters
// is that the harness may kill the process while we wait.
func (f *faults) hook(ctx context.Context, point, key string) {
	if f == nil || f.HookURL == "" {
		return
	}
	u, err := url.Parse(f.HookURL)
	if err != nil {
		return // validated by LoadConfig
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
		f.log.DebugContext(ctx, "fault hook", slog.String("point", point), slog.String("error", err.Error()))
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		f.log.DebugContext(ctx, "fault hook", slog.String("point", point), slog.Int("status", resp.StatusCode))
	}
}

// effectError returns the injected failure of the effect for key, if any.
func (f *faults) effectError(ctx context.Context, key string, body string) error {
	if f == nil {
		return nil
	}
	var p struct {
		Poison bool `json:"poison"`
	}
	if f.Poison && json.Unmarshal([]byte(body), &p) == nil && p.Poison {
		return fmt.Errorf("%w: poison order fails every time", ErrInjected)
	}
	if !f.FailKeys[key] {
		return nil
	}
	attempt := f.attempt(ctx, key)
	if attempt <= f.FailTimes {
		return fmt.Errorf("%w: transient failure, attempt %d of %d failing", ErrInjected, attempt, f.FailTimes)
	}
	return nil
}

// attempt is the Guard's attempt count in lease mode; transactional mode has
// no lease, so it counts the calls of this process instead.
func (f *faults) attempt(ctx context.Context, key string) int {
	if l, ok := idem.LeaseFromContext(ctx); ok {
		return l.Attempt
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[key]++
	return f.calls[key]
}
