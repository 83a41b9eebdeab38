package consumer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

// tally is an effect that counts what it did per key.
type tally struct {
	mu      sync.Mutex
	applied map[string]int
	fail    map[string]error
}

func (t *tally) lease(_ context.Context, key string, _ events.SQSMessage) ([]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.fail[key]; err != nil {
		return nil, err
	}
	t.applied[key]++
	return []byte("card for " + key), nil
}

func (t *tally) tx(_ context.Context, key string, _ events.SQSMessage) (idem.TxEffect, error) {
	return idem.TxEffect{Writes: []any{"write " + key}, Result: []byte("card for " + key)}, nil
}

func (t *tally) count(key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.applied[key]
}

type harness struct {
	h       *Handler
	store   *idemtest.MemoryStore
	effect  *tally
	metrics *bytes.Buffer
	logs    *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newHarness builds a Handler on a memory store for the configuration env
// adds to a receipt table and the key orderId.
func newHarness(t *testing.T, env map[string]string) *harness {
	t.Helper()
	return newFaultyHarness(t, env)
}

// newFaultyHarness is newHarness with the fault switches of env around
// the effect, as Start puts them.
func newFaultyHarness(t *testing.T, env map[string]string) *harness {
	t.Helper()
	cfg, err := Load(getenv(mergeEnv(map[string]string{EnvTable: "receipts", EnvKey: "orderId"}, env)))
	if err != nil {
		t.Fatal(err)
	}
	hs := &harness{store: idemtest.NewMemoryStore(), effect: &tally{applied: map[string]int{}}, metrics: &bytes.Buffer{}, logs: &syncBuffer{}}
	log := slog.New(slog.NewJSONHandler(hs.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	eff := readFaults(NewEnv(getenv(env))).wrap(Effect{Lease: hs.effect.lease, Tx: hs.effect.tx}, log)
	if hs.h, err = New(cfg, hs.store, eff, WithMetrics(hs.metrics), WithLogger(log)); err != nil {
		t.Fatal(err)
	}
	return hs
}

func mergeEnv(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// deliver runs one batch and returns the failed message ids and the
// values of the EMF line it wrote.
func (hs *harness) deliver(t *testing.T, msgs ...events.SQSMessage) ([]string, map[string]float64) {
	t.Helper()
	hs.metrics.Reset()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: "req-1"})
	resp, err := hs.h.Handle(ctx, events.SQSEvent{Records: msgs})
	if err != nil {
		t.Fatalf("Handle returned %v, want nil", err)
	}
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	slices.Sort(failed)
	var doc map[string]any
	if err := json.Unmarshal(hs.metrics.Bytes(), &doc); err != nil {
		t.Fatalf("EMF line is not one JSON object: %v\n%s", err, hs.metrics.String())
	}
	values := map[string]float64{}
	for _, name := range Metrics() {
		v, ok := doc[name].(float64)
		if !ok {
			t.Fatalf("EMF line has no value for %s: %s", name, hs.metrics.String())
		}
		values[name] = v
	}
	return failed, values
}

func order(messageID, key string) events.SQSMessage {
	return message(messageID, fmt.Sprintf(`{"orderId":%q,"amountCents":500}`, key), map[string]string{"orderId": key})
}

// TestHandle runs each outcome through Handle next to a healthy record.
func TestHandle(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		prepare func(t *testing.T, hs *harness)
		msg     events.SQSMessage
		failed  bool
		metric  string
		applied int // the lease effect's count for o-1 afterwards
		logs    string
	}{
		{name: "executed", msg: order("m1", "o-1"), metric: MetricExecuted, applied: 1},
		{
			name:    "duplicate",
			prepare: func(t *testing.T, hs *harness) { hs.deliver(t, order("m0", "o-1")) },
			msg:     order("m1", "o-1"), metric: MetricDuplicate, applied: 1,
		},
		{
			name: "in progress",
			prepare: func(t *testing.T, hs *harness) {
				now := time.Now()
				g, _ := idem.New(hs.store, DefaultNamespace)
				if _, ok, err := hs.store.Acquire(t.Context(), idem.Acquisition{
					Key: g.StorageKey("o-1"), Lease: "other", LeaseUntil: now.Add(time.Hour), ExpiresAt: now.Add(time.Hour), Now: now,
				}); !ok || err != nil {
					t.Fatal(ok, err)
				}
			},
			msg: order("m1", "o-1"), failed: true, metric: MetricInProgress, logs: "in progress",
		},
		{
			name:    "effect failure",
			prepare: func(t *testing.T, hs *harness) { hs.effect.fail = map[string]error{"o-1": errors.New("ledger down")} },
			msg:     order("m1", "o-1"), failed: true, metric: MetricFailed, logs: "ledger down",
		},
		{
			name:    "payload mismatch",
			prepare: func(t *testing.T, hs *harness) { hs.deliver(t, order("m0", "o-1")) },
			msg:     message("m1", `{"orderId":"o-1","amountCents":999}`, map[string]string{"orderId": "o-1"}),
			failed:  true, metric: MetricMismatch, applied: 1, logs: "different payload",
		},
		{name: "no key", msg: message("m1", `{"customer":"c-1"}`, nil), failed: true, metric: MetricRejected, logs: "no idempotency key"},
		{name: "not JSON, no attribute", msg: message("m1", `{"orderId": "o-`, nil), failed: true, metric: MetricRejected, logs: "not a JSON object"},
		{
			name: "attribute and body differ", msg: message("m1", `{"orderId":"o-2"}`, map[string]string{"orderId": "o-1"}),
			failed: true, metric: MetricRejected, logs: ErrKeyConflict.Error(),
		},
		{name: "key from the body", msg: message("m1", `{"orderId":"o-1"}`, nil), metric: MetricExecuted, applied: 1},
		{name: "transactional", env: map[string]string{EnvMode: ModeTransactional}, msg: order("m1", "o-1"), metric: MetricExecuted},
		{
			name: "transactional duplicate", env: map[string]string{EnvMode: ModeTransactional},
			prepare: func(t *testing.T, hs *harness) { hs.deliver(t, order("m0", "o-1")) },
			msg:     order("m1", "o-1"), metric: MetricDuplicate,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := newHarness(t, tt.env)
			if tt.prepare != nil {
				tt.prepare(t, hs)
			}
			failed, metrics := hs.deliver(t, tt.msg, order("healthy", "o-healthy"))
			var want []string
			if tt.failed {
				want = []string{"m1"}
			}
			if !slices.Equal(failed, want) {
				t.Errorf("failed = %v, want %v", failed, want)
			}
			wantMetrics := map[string]float64{MetricExecuted: 1} // the healthy record
			wantMetrics[tt.metric]++
			for _, name := range Metrics() {
				if metrics[name] != wantMetrics[name] {
					t.Errorf("metrics = %v, want %v", metrics, wantMetrics)
					break
				}
			}
			if got := hs.effect.count("o-1"); got != tt.applied {
				t.Errorf("effect applied %d times, want %d", got, tt.applied)
			}
			logs := hs.logs.String()
			if tt.logs != "" && !strings.Contains(logs, tt.logs) {
				t.Errorf("logs do not mention %q:\n%s", tt.logs, logs)
			}
			if !strings.Contains(logs, `"msg":"batch done"`) || !strings.Contains(logs, "req-1") {
				t.Errorf("no batch line with the request id:\n%s", logs)
			}
			if strings.Contains(logs, "amountCents") || strings.Contains(logs, `"o-1"`) {
				t.Errorf("a body or a key was logged without LOG_BODIES:\n%s", logs)
			}
		})
	}
}

// TestTransactionalOnce: the same key three times, twice in one batch: its
// writes are committed once.
func TestTransactionalOnce(t *testing.T) {
	hs := newHarness(t, map[string]string{EnvMode: ModeTransactional, EnvCacheSize: "0"})
	if failed, _ := hs.deliver(t, order("m1", "o-1"), order("m2", "o-1")); len(failed) > 1 {
		t.Fatalf("failed = %v, want at most the concurrent copy", failed)
	}
	if failed, m := hs.deliver(t, order("m3", "o-1")); len(failed) != 0 || m[MetricDuplicate] != 1 {
		t.Fatalf("redelivery: failed %v, metrics %v; want a duplicate", failed, m)
	}
	if w := hs.store.Writes(); !slices.Equal(w, []any{"write o-1"}) {
		t.Errorf("writes committed %v, want one", w)
	}
	if hs.effect.count("o-1") != 0 {
		t.Error("transactional mode ran the lease effect")
	}
}

func TestLogBodies(t *testing.T) {
	hs := newHarness(t, map[string]string{EnvLogBodies: "true"})
	hs.deliver(t, message("m1", `{"orderId":"o-1","amountCents":"x"`, nil), order("m2", "o-2"))
	logs := hs.logs.String()
	if !strings.Contains(logs, `\"amountCents\":\"x\"`) {
		t.Errorf("the failed record's body is not logged:\n%s", logs)
	}
	if strings.Contains(logs, `\"amountCents\":500`) {
		t.Errorf("the body of a successful record was logged:\n%s", logs)
	}
}

// TestNewRefusesWhatCannotWork: an effect or a store that does not fit the
// configuration is a *ConfigError naming the variable, before any message.
func TestNewRefusesWhatCannotWork(t *testing.T) {
	fx := &tally{applied: map[string]int{}}
	tests := []struct {
		name  string
		env   map[string]string
		eff   Effect
		store idem.Store
		want  []string
	}{
		{"lease mode, tx effect", nil, Effect{Tx: fx.tx}, idemtest.NewMemoryStore(), []string{EnvMode}},
		{"tx mode, lease effect", map[string]string{EnvMode: ModeTransactional}, Effect{Lease: fx.lease}, idemtest.NewMemoryStore(), []string{EnvMode}},
		{"tx mode, no transactions", map[string]string{EnvMode: ModeTransactional}, Effect{Tx: fx.tx}, noTx{idemtest.NewMemoryStore()}, []string{EnvMode}},
		{"no key", map[string]string{EnvKey: ""}, Effect{Lease: fx.lease}, idemtest.NewMemoryStore(), []string{EnvKey}},
		{"nothing", map[string]string{EnvKey: ""}, Effect{}, idemtest.NewMemoryStore(), []string{EnvKey, EnvMode}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Load(getenv(mergeEnv(map[string]string{EnvTable: "receipts", EnvKey: "orderId"}, tt.env)))
			if err != nil {
				t.Fatal(err)
			}
			_, err = New(cfg, tt.store, tt.eff)
			if got := problemVars(t, err); !slices.Equal(got, tt.want) || !errors.Is(err, ErrConfig) {
				t.Errorf("New: %v, want problems with %v", err, tt.want)
			}
		})
	}
}

// noTx is a store without transactions.
type noTx struct{ *idemtest.MemoryStore }

func (s noTx) Capabilities() idem.Capabilities {
	c := s.MemoryStore.Capabilities()
	c.Transactions = false
	return c
}
