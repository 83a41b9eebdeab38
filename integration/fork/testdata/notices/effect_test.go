package effect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

// partner is a payment partner on httptest that counts every notice that
// gets through, repeats included (so a double effect shows), and answers
// the lookup GET /notify/<key>. It keeps connections alive, as a real one
// does.
type partner struct {
	*httptest.Server
	mu      sync.Mutex
	notices map[string]int
	posts   []string // "key attempt N", in order
	bodies  []Payment
	lookups int
	refuse  int  // with status != 0: every POST answers it, notifying nothing
	lose    bool // every POST is notified, then the reply is lost
	down    bool // every request answers 503, notifying nothing
}

func newPartner(t *testing.T) *partner {
	p := &partner{notices: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /notify", func(w http.ResponseWriter, r *http.Request) {
		var body Payment
		_ = json.NewDecoder(r.Body).Decode(&body)
		p.mu.Lock()
		key := r.Header.Get("Idempotency-Key")
		p.posts = append(p.posts, key+" attempt "+r.Header.Get("Fencing-Token"))
		p.bodies = append(p.bodies, body)
		refuse, lose, down := p.refuse, p.lose, p.down
		if refuse == 0 && !down {
			p.notices[key]++
		}
		p.mu.Unlock()
		switch {
		case down:
			w.WriteHeader(http.StatusServiceUnavailable)
		case refuse != 0:
			w.WriteHeader(refuse)
		case lose:
			panic(http.ErrAbortHandler) // the connection closes unanswered
		default:
			_ = json.NewEncoder(w).Encode(map[string]string{"id": "ntc-" + key})
		}
	})
	mux.HandleFunc("GET /notify/{key}", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.lookups++
		switch key := r.PathValue("key"); {
		case p.down:
			w.WriteHeader(http.StatusServiceUnavailable)
		case p.notices[key] == 0:
			w.WriteHeader(http.StatusNotFound)
		default:
			_ = json.NewEncoder(w).Encode(map[string]string{"id": "ntc-" + key})
		}
	})
	mux.HandleFunc("GET /notify", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		_ = json.NewEncoder(w).Encode(p.notices)
	})
	p.Server = httptest.NewServer(mux)
	t.Cleanup(p.Close)
	return p
}

func (p *partner) url() string { return p.URL + "/notify" }

func (p *partner) set(f func(p *partner)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

// count is how often key was notified, and how many lookups there were.
func (p *partner) count(key string) (notices, lookups int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.notices[key], p.lookups
}

// run is the runtime's handler around the notifier, as Start builds it,
// in lease mode on a memory store, calling a partner.
type run struct {
	h       *consumer.Handler
	partner *partner
}

func newRun(t *testing.T, unknownOutcome string) *run {
	t.Helper()
	cfg, err := consumer.Load(func(k string) string {
		return map[string]string{
			consumer.EnvTable: "receipts", consumer.EnvKey: contract.KeyField, consumer.EnvMode: consumer.ModeLease,
			consumer.EnvUnknownOutcome: unknownOutcome,
		}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &run{partner: newPartner(t)}
	n := NewNotifier(r.partner.url(), &http.Client{Transport: &http.Transport{}})
	r.h, err = consumer.New(cfg, idemtest.NewMemoryStore(), consumer.Effect{Lease: n.Notify, Reconcile: n.Reconcile},
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

// message is the probe's payment for key as the producer sends it: the
// key in the message attribute too.
func message(t *testing.T, id, key string, variant int) events.SQSMessage {
	t.Helper()
	body, err := (&Probe{}).Message(key, variant)
	if err != nil {
		t.Fatal(err)
	}
	return withKey(events.SQSMessage{MessageId: id, Body: string(body)}, key)
}

func withKey(m events.SQSMessage, key string) events.SQSMessage {
	m.MessageAttributes = map[string]events.SQSMessageAttribute{contract.KeyField: {DataType: "String", StringValue: &key}}
	return m
}

// TestNotifyOnce: a payment delivered three times is notified once, with
// its key as the Idempotency-Key and the attempt as the Fencing-Token; a
// message keyed by the attribute only is notified under it; the probe's
// other variant is a payload mismatch; the probe counts the partner's
// notices.
func TestNotifyOnce(t *testing.T) {
	r := newRun(t, "")
	for i := range 3 {
		if failed := r.deliver(t, message(t, fmt.Sprint("m", i), "p-1", 0)); len(failed) != 0 {
			t.Fatalf("delivery %d: failed %v", i, failed)
		}
	}
	attrOnly := withKey(events.SQSMessage{MessageId: "a", Body: `{"amountCents":500,"currency":"USD","payee":"acct-9"}`}, "p-2")
	if failed := r.deliver(t, attrOnly); len(failed) != 0 {
		t.Fatalf("keyed by the attribute only: failed %v", failed)
	}
	if failed := r.deliver(t, message(t, "v", "p-1", 1)); !slices.Equal(failed, []string{"v"}) {
		t.Fatalf("variant 1: failed %v, want a mismatch", failed)
	}
	r.partner.mu.Lock()
	posts, bodies := slices.Clone(r.partner.posts), slices.Clone(r.partner.bodies)
	r.partner.mu.Unlock()
	if !slices.Equal(posts, []string{"p-1 attempt 1", "p-2 attempt 1"}) {
		t.Errorf("posts %v, want one per payment with its key and attempt 1", posts)
	}
	if want := (Payment{PaymentID: "p-2", AmountCents: 500, Currency: "USD", Payee: "acct-9"}); len(bodies) != 2 || bodies[1] != want {
		t.Errorf("bodies %+v, want the second %+v", bodies, want)
	}
	probe := NewProbe(nil, func(k string) string { return map[string]string{contract.EnvPartnerURL: r.partner.url()}[k] })
	applied, err := probe.Applied(t.Context(), []string{"p-1", "p-2", "p-3"})
	if err != nil || !maps.Equal(applied, map[string]int{"p-1": 1, "p-2": 1}) {
		t.Errorf("probe: %v, %v; want p-1 and p-2 once", applied, err)
	}
}

// TestLostReplyIsReconciled: a payment the partner took although its reply
// was lost (on a kept-alive connection, where Go's transport would resend
// the request by itself) is sent once, not again: the next delivery asks
// the partner first, finds it, and writes the receipt. A new payment asks
// nothing.
func TestLostReplyIsReconciled(t *testing.T) {
	r := newRun(t, "")
	if failed := r.deliver(t, message(t, "m0", "p-0", 0)); len(failed) != 0 {
		t.Fatalf("failed %v", failed)
	}
	r.partner.set(func(p *partner) { p.lose = true })
	if failed := r.deliver(t, message(t, "m1", "p-1", 0)); !slices.Equal(failed, []string{"m1"}) {
		t.Fatalf("reply lost: failed %v", failed)
	}
	if notices, _ := r.partner.count("p-1"); notices != 1 {
		t.Fatalf("%d notices after one lost reply, want 1: the attempt sent it again", notices)
	}
	r.partner.set(func(p *partner) { p.lose = false })
	if failed := r.deliver(t, message(t, "m2", "p-1", 0)); len(failed) != 0 {
		t.Fatalf("after the lost reply: failed %v", failed)
	}
	if notices, lookups := r.partner.count("p-1"); notices != 1 || lookups != 1 {
		t.Fatalf("%d notices, %d lookups; want 1 notice, reconciled by 1 lookup", notices, lookups)
	}
	r.deliver(t, message(t, "m3", "p-2", 0))
	if notices, lookups := r.partner.count("p-2"); notices != 1 || lookups != 1 {
		t.Fatalf("a new payment: %d notices, %d lookups; want 1, still 1", notices, lookups)
	}
}

// TestRefusalIsDefinite: a partner's refusal (4xx) and a bad payment are
// definite failures (nothing was notified): the next delivery notifies
// without asking the partner. A bad payment never reaches it.
func TestRefusalIsDefinite(t *testing.T) {
	r := newRun(t, "")
	r.partner.set(func(p *partner) { p.refuse = http.StatusUnprocessableEntity })
	if failed := r.deliver(t, message(t, "m1", "p-1", 0)); !slices.Equal(failed, []string{"m1"}) {
		t.Fatalf("refused: failed %v", failed)
	}
	n := NewNotifier(r.partner.url(), http.DefaultClient)
	_, err := n.Notify(t.Context(), "p-1", message(t, "m", "p-1", 0))
	if !idem.IsDefinite(err) || idem.ErrorClass(err) != "partner-refused-422" {
		t.Errorf("refusal: %v (class %q), want definite, partner-refused-422", err, idem.ErrorClass(err))
	}
	r.partner.set(func(p *partner) { p.refuse = 0 })
	if failed := r.deliver(t, message(t, "m2", "p-1", 0)); len(failed) != 0 {
		t.Fatalf("after a refusal: failed %v", failed)
	}
	if notices, lookups := r.partner.count("p-1"); notices != 1 || lookups != 0 {
		t.Errorf("%d notices, %d lookups; want 1, without reconciling a refusal", notices, lookups)
	}

	r.partner.mu.Lock()
	posts := len(r.partner.posts)
	r.partner.mu.Unlock()
	for _, body := range []string{
		`nope`,
		`{"amountCents":0,"currency":"EUR","payee":"a"}`,
		`{"amountCents":100,"currency":"eur","payee":"a"}`,
		`{"amountCents":100,"currency":"EUR","payee":" "}`,
	} {
		_, err := n.Notify(t.Context(), "p-9", withKey(events.SQSMessage{Body: body}, "p-9"))
		if !errors.Is(err, ErrBadPayment) || !idem.IsDefinite(err) || idem.ErrorClass(err) != "bad-payment" {
			t.Errorf("%s: %v (class %q), want a definite ErrBadPayment, bad-payment", body, err, idem.ErrorClass(err))
		}
	}
	r.partner.mu.Lock()
	defer r.partner.mu.Unlock()
	if len(r.partner.posts) != posts {
		t.Errorf("a bad payment reached the partner: %v", r.partner.posts[posts:])
	}
}

// TestPartnerDownCannotTell: a partner that answers 503, or none at all,
// leaves the outcome unknown (never definite), and its lookup cannot tell
// (an error, never "not notified"): with IDEM_UNKNOWN_OUTCOME=hold the
// payment is parked, not sent again.
func TestPartnerDownCannotTell(t *testing.T) {
	r := newRun(t, consumer.UnknownHold)
	n := NewNotifier(r.partner.url(), http.DefaultClient)
	r.partner.set(func(p *partner) { p.down = true })
	if _, err := n.Notify(t.Context(), "p-1", message(t, "m", "p-1", 0)); err == nil || idem.IsDefinite(err) || idem.ErrorClass(err) != "partner-503" {
		t.Errorf("503: %v (class %q), want an unknown outcome, partner-503", err, idem.ErrorClass(err))
	}
	if applied, _, err := n.Reconcile(t.Context(), "p-1", events.SQSMessage{}); applied || err == nil || idem.ErrorClass(err) != "partner-lookup-503" {
		t.Errorf("lookup on 503: %v, %v (class %q); want cannot tell, partner-lookup-503", applied, err, idem.ErrorClass(err))
	}
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	unreachable := NewNotifier(gone.URL+"/notify", http.DefaultClient)
	if _, err := unreachable.Notify(t.Context(), "p-1", message(t, "m", "p-1", 0)); err == nil || idem.IsDefinite(err) {
		t.Errorf("unreachable: %v, want an unknown outcome", err)
	}
	if applied, _, err := unreachable.Reconcile(t.Context(), "p-1", events.SQSMessage{}); applied || err == nil || idem.ErrorClass(err) != "partner-unreachable" {
		t.Errorf("lookup, unreachable: %v, %v; want cannot tell, partner-unreachable", applied, err)
	}

	// Through the runtime: the reply of p-2 lost, then the partner down:
	// the lookup cannot tell, and the payment is held, not sent again.
	r.partner.set(func(p *partner) { p.down, p.lose = false, true })
	if failed := r.deliver(t, message(t, "m1", "p-2", 0)); !slices.Equal(failed, []string{"m1"}) {
		t.Fatalf("reply lost: failed %v", failed)
	}
	r.partner.set(func(p *partner) { p.down, p.lose = true, false })
	if failed := r.deliver(t, message(t, "m2", "p-2", 0)); !slices.Equal(failed, []string{"m2"}) {
		t.Fatalf("partner down: failed %v", failed)
	}
	r.partner.mu.Lock()
	defer r.partner.mu.Unlock()
	if want := []string{"p-1 attempt ", "p-2 attempt 1"}; !slices.Equal(r.partner.posts, want) || r.partner.lookups != 2 {
		t.Errorf("posts %v, %d lookups; want %v and p-2 asked once (held, not sent again)", r.partner.posts, r.partner.lookups, want)
	}
}

// TestSetup: PARTNER_URL is required in lease mode and must be an http(s)
// URL, read with the runtime's Env so its problems come with the
// runtime's; the effect has lease mode only, as its probe says.
func TestSetup(t *testing.T) {
	tests := []struct {
		name string
		mode string
		env  map[string]string
		want []string // variables with a problem
	}{
		{"url", consumer.ModeLease, map[string]string{contract.EnvPartnerURL: "https://payments.example/notify"}, nil},
		{"no url", consumer.ModeLease, nil, []string{contract.EnvPartnerURL}},
		{"bad url", consumer.ModeLease, map[string]string{contract.EnvPartnerURL: "payments"}, []string{contract.EnvPartnerURL}},
		// The runtime refuses the mode itself (no Tx).
		{"transactional", consumer.ModeTransactional, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := consumer.NewEnv(func(k string) string { return tt.env[k] })
			eff, err := Setup(t.Context(), &consumer.Runtime{Config: consumer.Config{Mode: tt.mode}, Env: env})
			if err != nil || eff.Lease == nil || eff.Reconcile == nil {
				t.Fatalf("Setup: %+v, %v", eff, err)
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
