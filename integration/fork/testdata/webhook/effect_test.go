package effect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

// endpoint is a customer's webhook on httptest: POST /hooks/orders
// receives (every delivery that gets through counts, repeats included),
// GET /hooks/orders the counts. It cannot be asked about one event.
type endpoint struct {
	*httptest.Server
	mu       sync.Mutex
	received map[string]int
	ids      []string // Webhook-Id of each delivery that got through
	status   int      // != 0: every POST answers it, receiving nothing
	lose     bool     // every POST is received, then the reply is lost
}

func newEndpoint(t *testing.T) *endpoint {
	e := &endpoint{received: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hooks/orders", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		e.mu.Lock()
		key, status, lose := r.Header.Get("Idempotency-Key"), e.status, e.lose
		if status == 0 {
			e.received[key]++
			e.ids = append(e.ids, r.Header.Get("Webhook-Id"))
		}
		e.mu.Unlock()
		switch {
		case status != 0:
			w.WriteHeader(status)
		case lose:
			panic(http.ErrAbortHandler) // received; the connection closes unanswered
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	})
	mux.HandleFunc("GET /hooks/orders", func(w http.ResponseWriter, _ *http.Request) {
		e.mu.Lock()
		defer e.mu.Unlock()
		_ = json.NewEncoder(w).Encode(e.received)
	})
	e.Server = httptest.NewServer(mux)
	t.Cleanup(e.Close)
	return e
}

func (e *endpoint) url() string { return e.URL + "/hooks/orders" }

func (e *endpoint) set(f func(e *endpoint)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f(e)
}

func (e *endpoint) count(key string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.received[key]
}

// refusing is a client whose dials fail while refuse is set: the request
// never leaves. It keeps no connection alive, so that every request dials.
func refusing(refuse *atomic.Bool) *http.Client {
	var d net.Dialer
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if refuse.Load() {
			return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
		}
		return d.DialContext(ctx, network, addr)
	}}}
}

// run is the runtime's handler around the deliverer, as Start builds it,
// in lease mode with the app's policy (retry) on a memory store; its log
// says each record's outcome.
type run struct {
	h      *consumer.Handler
	hook   *endpoint
	refuse atomic.Bool
	mu     sync.Mutex
	log    bytes.Buffer
}

func (r *run) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log.Write(p)
}

func newRun(t *testing.T) *run {
	t.Helper()
	cfg, err := consumer.Load(func(k string) string {
		return map[string]string{
			consumer.EnvTable: "receipts", consumer.EnvKey: contract.KeyField, consumer.EnvMode: consumer.ModeLease,
			consumer.EnvUnknownOutcome: consumer.UnknownRetry,
		}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &run{hook: newEndpoint(t)}
	d := NewDeliverer(r.hook.url(), refusing(&r.refuse))
	r.h, err = consumer.New(cfg, idemtest.NewMemoryStore(), consumer.Effect{Lease: d.Deliver},
		consumer.WithMetrics(io.Discard), consumer.WithLogger(slog.New(slog.NewJSONHandler(r, nil))))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// deliver runs one batch and returns the failed message ids.
func (r *run) deliver(t *testing.T, msgs ...events.SQSMessage) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	resp, err := r.h.Handle(ctx, events.SQSEvent{Records: msgs})
	if err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	return failed
}

// outcome is the last outcome the runtime logged for message id.
func (r *run) outcome(id string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	last := ""
	for _, line := range strings.Split(r.log.String(), "\n") {
		var l struct {
			ID      string `json:"message_id"`
			Outcome string `json:"outcome"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.ID == id && l.Outcome != "" {
			last = l.Outcome
		}
	}
	return last
}

// message is the probe's event for key as the producer sends it: the key
// in the message attribute too.
func message(t *testing.T, id, key string, variant int) events.SQSMessage {
	t.Helper()
	body, err := (&Probe{}).Message(key, variant)
	if err != nil {
		t.Fatal(err)
	}
	return events.SQSMessage{MessageId: id, Body: string(body), MessageAttributes: map[string]events.SQSMessageAttribute{
		contract.KeyField: {DataType: "String", StringValue: &key},
	}}
}

// TestDeliverOnce: an event delivered three times reaches the endpoint
// once, with its key as the Idempotency-Key and the Webhook-Id; the
// probe's other variant is a payload mismatch; the probe counts.
func TestDeliverOnce(t *testing.T) {
	r := newRun(t)
	for i := range 3 {
		if failed := r.deliver(t, message(t, fmt.Sprint("m", i), "e-1", 0)); len(failed) != 0 {
			t.Fatalf("delivery %d: failed %v", i, failed)
		}
	}
	if failed := r.deliver(t, message(t, "v", "e-1", 1)); !slices.Equal(failed, []string{"v"}) {
		t.Fatalf("variant 1: failed %v, want a mismatch", failed)
	}
	r.hook.mu.Lock()
	ids := slices.Clone(r.hook.ids)
	r.hook.mu.Unlock()
	if !slices.Equal(ids, []string{"e-1"}) {
		t.Errorf("deliveries with Webhook-Id %v, want one, e-1", ids)
	}
	probe := NewProbe(nil, func(k string) string { return map[string]string{contract.EnvWebhookURL: r.hook.url()}[k] })
	applied, err := probe.Applied(t.Context(), []string{"e-1", "e-2"})
	if err != nil || !maps.Equal(applied, map[string]int{"e-1": 1}) {
		t.Errorf("probe: %v, %v; want e-1 once", applied, err)
	}
}

// TestClassify: which failures are definite (nothing arrived) and which
// leave the outcome unknown (run again, counted), on the errors a real
// client gets.
func TestClassify(t *testing.T) {
	e := newEndpoint(t)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close() // its port refuses connections: the request never leaves
	tests := []struct {
		name     string
		url      string
		set      func(e *endpoint)
		body     string
		definite bool
		class    string
	}{
		{name: "received", url: e.url()},
		{name: "never left: connection refused", url: gone.URL + "/hooks/orders", definite: true, class: "hook-unreachable"},
		{name: "refused: 410", url: e.url(), set: func(e *endpoint) { e.status = http.StatusGone }, definite: true, class: "hook-refused-410"},
		{name: "429: come back later", url: e.url(), set: func(e *endpoint) { e.status = http.StatusTooManyRequests }, class: "hook-429"},
		{name: "5xx", url: e.url(), set: func(e *endpoint) { e.status = http.StatusInternalServerError }, class: "hook-500"},
		{name: "reply lost", url: e.url(), set: func(e *endpoint) { e.lose = true }, class: "hook-no-answer"},
		{name: "bad event", url: e.url(), body: `{"eventId":"e-1","type":"invoice.paid","data":{}}`, definite: true, class: "bad-event"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.set(func(e *endpoint) { e.status, e.lose = 0, false })
			if tt.set != nil {
				e.set(tt.set)
			}
			msg := message(t, "m", "e-1", 0)
			if tt.body != "" {
				msg.Body = tt.body
			}
			_, err := NewDeliverer(tt.url, &http.Client{Transport: &http.Transport{}}).Deliver(t.Context(), "e-1", msg)
			switch {
			case tt.class == "" && err != nil:
				t.Fatalf("Deliver: %v", err)
			case tt.class == "":
				return
			case err == nil:
				t.Fatal("Deliver succeeded, want an error")
			}
			if got := idem.IsDefinite(err); got != tt.definite || idem.ErrorClass(err) != tt.class {
				t.Errorf("%v: definite %v, class %q; want %v, %q", err, got, idem.ErrorClass(err), tt.definite, tt.class)
			}
		})
	}
}

// TestUnknownIsRunAgain: through the runtime, with the app's policy
// (retry) and no Reconcile: an event whose reply was lost is delivered
// again on the next delivery, a rerun (twice in all: the window); one
// answered 5xx is delivered again too, a rerun (once in all: the first
// never arrived). A refusal and a request that never left are definite:
// the next delivery sends the event, executed, not a rerun.
func TestUnknownIsRunAgain(t *testing.T) {
	r := newRun(t)
	r.hook.set(func(e *endpoint) { e.lose = true })
	r.deliver(t, message(t, "m1", "e-lost", 0))
	r.hook.set(func(e *endpoint) { e.lose, e.status = false, http.StatusServiceUnavailable })
	r.deliver(t, message(t, "m2", "e-5xx", 0))
	r.hook.set(func(e *endpoint) { e.status = http.StatusGone })
	r.deliver(t, message(t, "m3", "e-refused", 0))
	r.hook.set(func(e *endpoint) { e.status = 0 })
	r.refuse.Store(true)
	r.deliver(t, message(t, "m4", "e-refused-dial", 0))
	r.refuse.Store(false)

	for _, tc := range []struct {
		key, outcome string
		received     int
	}{
		{"e-lost", "rerun", 2}, {"e-5xx", "rerun", 1}, {"e-refused", "executed", 1}, {"e-refused-dial", "executed", 1},
	} {
		id := "again-" + tc.key
		if failed := r.deliver(t, message(t, id, tc.key, 0)); len(failed) != 0 {
			t.Errorf("%s, delivered again: failed %v", tc.key, failed)
		}
		if got, n := r.outcome(id), r.hook.count(tc.key); got != tc.outcome || n != tc.received {
			t.Errorf("%s, delivered again: %s, received %d times; want %s, %d", tc.key, got, n, tc.outcome, tc.received)
		}
	}
}

// TestSetup: WEBHOOK_URL is required in lease mode and must be an http(s)
// URL, read with the runtime's Env; the effect has no Reconcile and lease
// mode only, as its probe says.
func TestSetup(t *testing.T) {
	tests := []struct {
		name string
		mode string
		env  map[string]string
		want []string // variables with a problem
	}{
		{"url", consumer.ModeLease, map[string]string{contract.EnvWebhookURL: "https://customer.example/hooks/orders"}, nil},
		{"no url", consumer.ModeLease, nil, []string{contract.EnvWebhookURL}},
		{"bad url", consumer.ModeLease, map[string]string{contract.EnvWebhookURL: "hooks"}, []string{contract.EnvWebhookURL}},
		{"transactional", consumer.ModeTransactional, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := consumer.NewEnv(func(k string) string { return tt.env[k] })
			eff, err := Setup(t.Context(), &consumer.Runtime{Config: consumer.Config{Mode: tt.mode}, Env: env})
			if err != nil || eff.Lease == nil || eff.Reconcile != nil {
				t.Fatalf("Setup: %+v, %v; want a Lease and no Reconcile", eff, err)
			}
			if !slices.Equal(eff.Modes(), (&Probe{}).Modes()) {
				t.Errorf("the effect implements %v, the probe says %v", eff.Modes(), (&Probe{}).Modes())
			}
			var got []string
			var cerr *consumer.ConfigError
			if errors.As(env.Err("consumer"), &cerr) {
				got = cerr.Vars()
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("problems with %v, want %v", got, tt.want)
			}
		})
	}
}
