package effect

import (
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

// psp is a payment service provider on httptest: POST /v1/captures
// captures (every call that gets through counts, repeats included, so a
// double capture shows; a real PSP would answer a repeated key with the
// first capture), GET /v1/captures the counts. It has no lookup.
type psp struct {
	*httptest.Server
	mu       sync.Mutex
	captures map[string]int
	bodies   []Order
	status   int  // != 0: every POST answers it, capturing nothing
	lose     bool // every POST is captured, then the reply is lost
}

func newPSP(t *testing.T) *psp {
	p := &psp{captures: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/captures", func(w http.ResponseWriter, r *http.Request) {
		var o Order
		_ = json.NewDecoder(r.Body).Decode(&o)
		p.mu.Lock()
		key, status, lose := r.Header.Get("Idempotency-Key"), p.status, p.lose
		p.bodies = append(p.bodies, o)
		if status == 0 {
			p.captures[key]++
		}
		p.mu.Unlock()
		switch {
		case status != 0:
			w.WriteHeader(status)
		case lose:
			panic(http.ErrAbortHandler) // captured; the connection closes unanswered
		default:
			_ = json.NewEncoder(w).Encode(map[string]string{"id": "cap_" + key})
		}
	})
	mux.HandleFunc("GET /v1/captures", func(w http.ResponseWriter, _ *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		_ = json.NewEncoder(w).Encode(p.captures)
	})
	p.Server = httptest.NewServer(mux)
	t.Cleanup(p.Close)
	return p
}

func (p *psp) url() string { return p.URL + "/v1/captures" }

func (p *psp) set(f func(p *psp)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

func (p *psp) count(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.captures[key]
}

// refusing is a client whose dials fail while refuse is set, as they do
// when the PSP's address refuses connections: the request never leaves.
// It keeps no connection alive, so that every request dials.
func refusing(refuse *atomic.Bool) *http.Client {
	var d net.Dialer
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if refuse.Load() {
			return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
		}
		return d.DialContext(ctx, network, addr)
	}}}
}

// run is the runtime's handler around the capturer, as Start builds it,
// in lease mode with the app's policy (hold) on a memory store.
type run struct {
	h      *consumer.Handler
	psp    *psp
	refuse atomic.Bool
}

func newRun(t *testing.T) *run {
	t.Helper()
	cfg, err := consumer.Load(func(k string) string {
		return map[string]string{
			consumer.EnvTable: "receipts", consumer.EnvKey: contract.KeyField, consumer.EnvMode: consumer.ModeLease,
			consumer.EnvUnknownOutcome: consumer.UnknownHold,
		}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &run{psp: newPSP(t)}
	c := NewCapturer(r.psp.url(), refusing(&r.refuse))
	r.h, err = consumer.New(cfg, idemtest.NewMemoryStore(), consumer.Effect{Lease: c.Capture},
		consumer.WithMetrics(io.Discard), consumer.WithLogger(slog.New(slog.DiscardHandler)))
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

// message is the probe's order for key: the key in the body only, as the
// order service sends it.
func message(t *testing.T, id, key string, variant int) events.SQSMessage {
	t.Helper()
	body, err := (&Probe{}).Message(key, variant)
	if err != nil {
		t.Fatal(err)
	}
	return events.SQSMessage{MessageId: id, Body: string(body)}
}

// TestCaptureOnce: an order delivered three times is captured once, with
// its key as the Idempotency-Key and in the body; the probe's other
// variant is a payload mismatch; the probe counts the PSP's captures.
func TestCaptureOnce(t *testing.T) {
	r := newRun(t)
	for i := range 3 {
		if failed := r.deliver(t, message(t, fmt.Sprint("m", i), "o-1", 0)); len(failed) != 0 {
			t.Fatalf("delivery %d: failed %v", i, failed)
		}
	}
	if failed := r.deliver(t, message(t, "v", "o-1", 1)); !slices.Equal(failed, []string{"v"}) {
		t.Fatalf("variant 1: failed %v, want a mismatch", failed)
	}
	r.psp.mu.Lock()
	bodies := slices.Clone(r.psp.bodies)
	r.psp.mu.Unlock()
	if want := (Order{OrderID: "o-1", AmountCents: 4200, Currency: "EUR", PaymentMethod: "pm_o-1"}); len(bodies) != 1 || bodies[0] != want {
		t.Errorf("captures %+v, want one: %+v", bodies, want)
	}
	probe := NewProbe(nil, func(k string) string { return map[string]string{contract.EnvPSPURL: r.psp.url()}[k] })
	applied, err := probe.Applied(t.Context(), []string{"o-1", "o-2"})
	if err != nil || !maps.Equal(applied, map[string]int{"o-1": 1}) {
		t.Errorf("probe: %v, %v; want o-1 once", applied, err)
	}
}

// TestClassify: which failures are definite (nothing was captured: the
// next delivery captures at once) and which leave the outcome unknown (the
// app holds the key for an operator), on the errors a real client gets.
func TestClassify(t *testing.T) {
	p := newPSP(t)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close() // its port refuses connections: the request never leaves
	tests := []struct {
		name     string
		url      string
		set      func(p *psp)
		ctx      func() (context.Context, context.CancelFunc)
		body     string
		definite bool
		class    string
	}{
		{name: "captured", url: p.url()},
		{name: "never left: connection refused", url: gone.URL + "/v1/captures", definite: true, class: "psp-unreachable"},
		{name: "refused: 422", url: p.url(), set: func(p *psp) { p.status = http.StatusUnprocessableEntity }, definite: true, class: "psp-refused-422"},
		{name: "refused: 402", url: p.url(), set: func(p *psp) { p.status = http.StatusPaymentRequired }, definite: true, class: "psp-refused-402"},
		{name: "409: still working on the key", url: p.url(), set: func(p *psp) { p.status = http.StatusConflict }, class: "psp-409"},
		{name: "5xx", url: p.url(), set: func(p *psp) { p.status = http.StatusBadGateway }, class: "psp-502"},
		{name: "reply lost", url: p.url(), set: func(p *psp) { p.lose = true }, class: "psp-no-answer"},
		{name: "deadline", url: p.url(), ctx: func() (context.Context, context.CancelFunc) {
			return context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		}, class: "psp-no-answer"},
		{name: "bad order", url: p.url(), body: `{"orderId":"o-1","amountCents":0,"currency":"EUR","paymentMethod":"pm"}`, definite: true, class: "bad-order"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p.set(func(p *psp) { p.status, p.lose = 0, false })
			if tt.set != nil {
				p.set(tt.set)
			}
			ctx, cancel := context.WithCancel(t.Context())
			if tt.ctx != nil {
				ctx, cancel = tt.ctx()
			}
			defer cancel()
			msg := message(t, "m", "o-1", 0)
			if tt.body != "" {
				msg.Body = tt.body
			}
			_, err := NewCapturer(tt.url, &http.Client{Transport: &http.Transport{}}).Capture(ctx, "o-1", msg)
			switch {
			case tt.class == "" && err != nil:
				t.Fatalf("Capture: %v", err)
			case tt.class == "":
				return
			case err == nil:
				t.Fatal("Capture succeeded, want an error")
			}
			if got := idem.IsDefinite(err); got != tt.definite || idem.ErrorClass(err) != tt.class {
				t.Errorf("%v: definite %v, class %q; want %v, %q", err, got, idem.ErrorClass(err), tt.definite, tt.class)
			}
		})
	}
}

// TestUnknownIsHeld: through the runtime, with the app's policy (hold) and
// no Reconcile: a capture whose reply was lost, and one answered 5xx, are
// held on the next delivery, not sent again; a refusal and a request that
// never left are definite: the next delivery captures at once.
func TestUnknownIsHeld(t *testing.T) {
	r := newRun(t)
	r.psp.set(func(p *psp) { p.lose = true })
	if failed := r.deliver(t, message(t, "m1", "o-lost", 0)); !slices.Equal(failed, []string{"m1"}) {
		t.Fatalf("reply lost: failed %v", failed)
	}
	r.psp.set(func(p *psp) { p.lose, p.status = false, http.StatusServiceUnavailable })
	if failed := r.deliver(t, message(t, "m2", "o-5xx", 0)); !slices.Equal(failed, []string{"m2"}) {
		t.Fatalf("503: failed %v", failed)
	}
	r.psp.set(func(p *psp) { p.status = http.StatusUnprocessableEntity })
	if failed := r.deliver(t, message(t, "m3", "o-refused", 0)); !slices.Equal(failed, []string{"m3"}) {
		t.Fatalf("422: failed %v", failed)
	}
	r.psp.set(func(p *psp) { p.status = 0 })
	r.refuse.Store(true)
	if failed := r.deliver(t, message(t, "m4", "o-refused-dial", 0)); !slices.Equal(failed, []string{"m4"}) {
		t.Fatalf("connection refused: failed %v", failed)
	}
	r.refuse.Store(false)

	// The next delivery of each.
	for _, tc := range []struct {
		key      string
		held     bool
		captures int
	}{
		{"o-lost", true, 1}, {"o-5xx", true, 0}, {"o-refused", false, 1}, {"o-refused-dial", false, 1},
	} {
		failed := r.deliver(t, message(t, "again-"+tc.key, tc.key, 0))
		if got := len(failed) == 1; got != tc.held {
			t.Errorf("%s, delivered again: failed %v; want held %v", tc.key, failed, tc.held)
		}
		if n := r.psp.count(tc.key); n != tc.captures {
			t.Errorf("%s: %d captures, want %d (held: never sent again)", tc.key, n, tc.captures)
		}
	}
}

// TestSetup: PSP_URL is required in lease mode and must be an http(s)
// URL, read with the runtime's Env so its problems come with the
// runtime's; the effect has no Reconcile (the PSP has no lookup) and lease
// mode only, as its probe says.
func TestSetup(t *testing.T) {
	tests := []struct {
		name string
		mode string
		env  map[string]string
		want []string // variables with a problem
	}{
		{"url", consumer.ModeLease, map[string]string{contract.EnvPSPURL: "https://psp.example/v1/captures"}, nil},
		{"no url", consumer.ModeLease, nil, []string{contract.EnvPSPURL}},
		{"bad url", consumer.ModeLease, map[string]string{contract.EnvPSPURL: "psp"}, []string{contract.EnvPSPURL}},
		// The runtime refuses the mode itself (no Tx).
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
