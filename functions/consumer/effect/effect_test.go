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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

// fakePartner issues cards as the template's partner would, without
// deduplicating (every POST that gets through counts, so a double effect
// shows), and answers GET /cards/<key>.
type fakePartner struct {
	*httptest.Server
	mu      sync.Mutex
	issued  map[string]int
	posts   []string // "key attempt N", in order
	lookups int
	answer  int  // with status != 0: every POST answers it without issuing
	lose    bool // every POST issues, then the reply is lost
	down    bool // every request answers 503
}

func newPartner(t *testing.T) *fakePartner {
	p := &fakePartner{issued: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /cards", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		key := r.Header.Get("Idempotency-Key")
		p.posts = append(p.posts, key+" attempt "+r.Header.Get("Fencing-Token"))
		answer, lose, down := p.answer, p.lose, p.down
		if answer == 0 && !down {
			p.issued[key]++
		}
		p.mu.Unlock()
		switch {
		case down:
			w.WriteHeader(http.StatusServiceUnavailable)
		case answer != 0:
			w.WriteHeader(answer)
		case lose:
			panic(http.ErrAbortHandler) // the connection closes unanswered
		}
	})
	mux.HandleFunc("GET /cards/{key}", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.lookups++
		switch {
		case p.down:
			w.WriteHeader(http.StatusServiceUnavailable)
		case p.issued[r.PathValue("key")] == 0:
			w.WriteHeader(http.StatusNotFound)
		}
	})
	mux.HandleFunc("GET /cards", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		_ = json.NewEncoder(w).Encode(p.issued)
	})
	p.Server = httptest.NewServer(mux)
	t.Cleanup(p.Close)
	return p
}

func (p *fakePartner) set(f func(p *fakePartner)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

func (p *fakePartner) count(key string) (issued, lookups int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.issued[key], p.lookups
}

// run builds the runtime's handler around the gift cards, as Start does,
// on a memory store.
type run struct {
	h       *consumer.Handler
	store   *idemtest.MemoryStore
	partner *fakePartner // lease mode
}

func newRun(t *testing.T, mode string) *run {
	t.Helper()
	cfg, err := consumer.Load(func(k string) string {
		return map[string]string{consumer.EnvTable: "receipts", consumer.EnvKey: contract.KeyField, consumer.EnvMode: mode}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &run{store: idemtest.NewMemoryStore()}
	url := ""
	if mode == consumer.ModeLease {
		r.partner = newPartner(t)
		url = r.partner.URL + "/cards"
	}
	g := NewGiftCards("ledger", url, http.DefaultClient)
	r.h, err = consumer.New(cfg, r.store, consumer.Effect{Lease: g.Issue, Reconcile: g.Reconcile, Tx: g.IssueTx},
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

// message is what the probe sends for key.
func message(t *testing.T, id, key string, variant int) events.SQSMessage {
	t.Helper()
	body, err := (&Probe{}).Message(key, variant)
	if err != nil {
		t.Fatal(err)
	}
	return events.SQSMessage{MessageId: id, Body: string(body)}
}

// TestProbeMessagesApplyOnce: the probe's messages are valid orders, its
// variant 0 is always the same message, another variant a payload
// mismatch; the probe counts what the partner issued.
func TestProbeMessagesApplyOnce(t *testing.T) {
	r := newRun(t, consumer.ModeLease)
	if failed := r.deliver(t, message(t, "m1", "o-1", 0), message(t, "m2", "o-1", 0)); len(failed) != 0 {
		t.Fatalf("failed %v", failed)
	}
	if failed := r.deliver(t, message(t, "m3", "o-1", 1)); !slices.Equal(failed, []string{"m3"}) {
		t.Fatalf("variant 1: failed %v, want a mismatch", failed)
	}
	probe := NewProbe(nil, func(k string) string {
		return map[string]string{consumer.EnvMode: consumer.ModeLease, contract.EnvEffectURL: r.partner.URL + "/cards"}[k]
	})
	applied, err := probe.Applied(t.Context(), []string{"o-1", "o-2"})
	if err != nil || !maps.Equal(applied, map[string]int{"o-1": 1}) {
		t.Errorf("probe: %v, %v; want o-1 issued once", applied, err)
	}
}

func TestTransactional(t *testing.T) {
	r := newRun(t, consumer.ModeTransactional)
	r.deliver(t, message(t, "m1", "o-1", 0))
	r.deliver(t, message(t, "m2", "o-1", 0))
	writes := r.store.Writes()
	if len(writes) != 1 {
		t.Fatalf("%d writes committed, want 1", len(writes))
	}
	w, ok := writes[0].(types.TransactWriteItem)
	if !ok || w.Update == nil || keyOf(w.Update.Key) != "o-1" || *w.Update.TableName != "ledger" ||
		!strings.Contains(*w.Update.UpdateExpression, "ADD") {
		t.Errorf("write %+v, want an ADD on o-1 in the ledger", writes[0])
	}
}

func keyOf(item map[string]types.AttributeValue) string {
	s, _ := item[contract.KeyField].(*types.AttributeValueMemberS)
	if s == nil {
		return ""
	}
	return s.Value
}

// TestRefusalsAreDefinite: a bad order and a partner's refusal (4xx) are
// definite failures, retried without asking the partner; a 5xx is not.
func TestRefusalsAreDefinite(t *testing.T) {
	r := newRun(t, consumer.ModeLease)
	bad := events.SQSMessage{MessageId: "bad", Body: fmt.Sprintf(`{%q:"o-1","amountCents":-5}`, contract.KeyField)}
	if failed := r.deliver(t, bad); !slices.Equal(failed, []string{"bad"}) {
		t.Errorf("negative amount: failed %v", failed)
	}
	r.partner.set(func(p *fakePartner) { p.answer = http.StatusUnprocessableEntity })
	if failed := r.deliver(t, message(t, "m1", "o-2", 0)); !slices.Equal(failed, []string{"m1"}) {
		t.Errorf("refused: failed %v", failed)
	}
	r.partner.set(func(p *fakePartner) { p.answer = 0 })
	if failed := r.deliver(t, message(t, "m2", "o-2", 0)); len(failed) != 0 {
		t.Errorf("after a refusal: failed %v", failed)
	}
	if issued, lookups := r.partner.count("o-2"); issued != 1 || lookups != 0 {
		t.Errorf("issued %d after %d lookups; want 1, without reconciling a refusal", issued, lookups)
	}

	r.partner.set(func(p *fakePartner) { p.down = true })
	if failed := r.deliver(t, message(t, "m3", "o-3", 0)); !slices.Equal(failed, []string{"m3"}) {
		t.Errorf("partner down: failed %v", failed)
	}
	r.partner.set(func(p *fakePartner) { p.down = false })
	if failed := r.deliver(t, message(t, "m4", "o-3", 0)); len(failed) != 0 {
		t.Errorf("partner back: failed %v", failed)
	}
	if issued, lookups := r.partner.count("o-3"); issued != 1 || lookups != 1 {
		t.Errorf("issued %d after %d lookups; want 1 after asking once (a 503 may hide anything)", issued, lookups)
	}
}

// TestLostReplyIsReconciled: a card the partner issued although its reply
// was lost is not issued again: the next delivery asks the partner first,
// finds it, and writes the receipt (without Reconcile, the double effect
// of lease mode).
func TestLostReplyIsReconciled(t *testing.T) {
	r := newRun(t, consumer.ModeLease)
	// A connection to reuse: Go's transport would replay a keyed POST on
	// a reused connection that breaks, unless the effect forbids it.
	r.deliver(t, message(t, "m0", "o-0", 0))
	r.partner.set(func(p *fakePartner) { p.lose = true })
	if failed := r.deliver(t, message(t, "m1", "o-1", 0)); !slices.Equal(failed, []string{"m1"}) {
		t.Fatalf("reply lost: failed %v", failed)
	}
	r.partner.set(func(p *fakePartner) { p.lose = false })
	if failed := r.deliver(t, message(t, "m2", "o-1", 0)); len(failed) != 0 {
		t.Fatalf("after the lost reply: failed %v", failed)
	}
	if issued, lookups := r.partner.count("o-1"); issued != 1 || lookups != 1 {
		t.Fatalf("issued %d, %d lookups; want 1 issuance, reconciled by 1 lookup", issued, lookups)
	}
	var posts int
	r.partner.set(func(p *fakePartner) { posts = len(p.posts) })
	if posts != 2 {
		t.Fatalf("%d calls; want 2 (o-0, and o-1 once: never replayed by the client)", posts)
	}
	// A new order asks nothing: reconciling is only for unknown outcomes.
	r.deliver(t, message(t, "m3", "o-2", 0))
	if _, lookups := r.partner.count("o-2"); lookups != 1 {
		t.Fatalf("%d lookups after a new order; want still 1", lookups)
	}
	// The partner cannot tell: the lookup fails, the default policy (retry)
	// issues again once the partner answers.
	r.partner.set(func(p *fakePartner) { p.lose = true })
	r.deliver(t, message(t, "m4", "o-3", 0))
	r.partner.set(func(p *fakePartner) { p.lose, p.down = false, true })
	if failed := r.deliver(t, message(t, "m5", "o-3", 0)); !slices.Equal(failed, []string{"m5"}) {
		t.Fatalf("lookup failed: failed %v", failed)
	}
}

// TestEffectURL: the effect POSTs each issuance with its key and attempt,
// once.
func TestEffectURL(t *testing.T) {
	r := newRun(t, consumer.ModeLease)
	r.deliver(t, message(t, "m1", "o-1", 0))
	r.deliver(t, message(t, "m2", "o-1", 0))
	r.partner.mu.Lock()
	defer r.partner.mu.Unlock()
	if !slices.Equal(r.partner.posts, []string{"o-1 attempt 1"}) {
		t.Errorf("posts = %v, want one with the key and attempt 1", r.partner.posts)
	}
}

// TestSetup: the effect reads its variables with the runtime's Env, so
// their problems come with the runtime's.
func TestSetup(t *testing.T) {
	tests := []struct {
		name string
		mode string
		env  map[string]string
		want []string // variables with a problem
	}{
		{"ledger", consumer.ModeTransactional, map[string]string{contract.EnvLedgerTable: "l"}, nil},
		{"no ledger", consumer.ModeTransactional, nil, []string{contract.EnvLedgerTable}},
		{"url", consumer.ModeLease, map[string]string{contract.EnvLedgerTable: "l", contract.EnvEffectURL: "https://x.example"}, nil},
		{"no url in lease mode", consumer.ModeLease, map[string]string{contract.EnvLedgerTable: "l"}, []string{contract.EnvEffectURL}},
		{"bad url", consumer.ModeLease, map[string]string{contract.EnvLedgerTable: "l", contract.EnvEffectURL: "x"}, []string{contract.EnvEffectURL}},
		{"url in tx mode", consumer.ModeTransactional, map[string]string{contract.EnvLedgerTable: "l", contract.EnvEffectURL: "https://x.example"}, []string{contract.EnvEffectURL}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := consumer.NewEnv(func(k string) string { return tt.env[k] })
			rt := &consumer.Runtime{Config: consumer.Config{Mode: tt.mode}, DynamoDB: &dynamodb.Client{}, Env: env}
			eff, err := Setup(t.Context(), rt)
			if err != nil || eff.Lease == nil || eff.Tx == nil || eff.Reconcile == nil {
				t.Fatalf("Setup: %v, %v", eff, err)
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
