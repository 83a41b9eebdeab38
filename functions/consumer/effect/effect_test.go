package effect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
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

// fakeLedger applies ADD issued :one per UpdateItem, as DynamoDB would,
// and reads it back with GetItem.
type fakeLedger struct {
	mu      sync.Mutex
	issued  map[string]int
	fail    error // every request fails
	applied bool  // with fail: UpdateItem applies, then fails (a timeout after the write)
	reads   int
}

func (l *fakeLedger) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail != nil && !l.applied {
		return nil, l.fail
	}
	if l.issued == nil {
		l.issued = map[string]int{}
	}
	l.issued[keyOf(in.Key)]++
	return &dynamodb.UpdateItemOutput{}, l.fail
}

func (l *fakeLedger) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reads++
	if l.fail != nil {
		return nil, l.fail
	}
	n := l.issued[keyOf(in.Key)]
	if n == 0 {
		return &dynamodb.GetItemOutput{}, nil
	}
	return &dynamodb.GetItemOutput{Item: map[string]types.AttributeValue{"issued": &types.AttributeValueMemberN{Value: fmt.Sprint(n)}}}, nil
}

func (l *fakeLedger) count(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.issued[key]
}

func keyOf(item map[string]types.AttributeValue) string {
	s, _ := item[contract.KeyField].(*types.AttributeValueMemberS)
	if s == nil {
		return ""
	}
	return s.Value
}

// run builds the runtime's handler around the gift cards, as Start does,
// on a memory store.
type run struct {
	h      *consumer.Handler
	store  *idemtest.MemoryStore
	ledger *fakeLedger
}

func newRun(t *testing.T, mode, url string) *run {
	t.Helper()
	cfg, err := consumer.Load(func(k string) string {
		return map[string]string{consumer.EnvTable: "receipts", consumer.EnvKey: contract.KeyField, consumer.EnvMode: mode}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &run{store: idemtest.NewMemoryStore(), ledger: &fakeLedger{}}
	g := NewGiftCards(r.ledger, "ledger", url, http.DefaultClient)
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
// variant 0 is always the same message, another variant a payload mismatch.
func TestProbeMessagesApplyOnce(t *testing.T) {
	r := newRun(t, consumer.ModeLease, "")
	if failed := r.deliver(t, message(t, "m1", "o-1", 0), message(t, "m2", "o-1", 0)); len(failed) != 0 {
		t.Fatalf("failed %v", failed)
	}
	if failed := r.deliver(t, message(t, "m3", "o-1", 1)); !slices.Equal(failed, []string{"m3"}) {
		t.Fatalf("variant 1: failed %v, want a mismatch", failed)
	}
	if n := r.ledger.count("o-1"); n != 1 {
		t.Errorf("issued %d, want 1", n)
	}
}

func TestTransactional(t *testing.T) {
	r := newRun(t, consumer.ModeTransactional, "")
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
	if r.ledger.count("o-1") != 0 {
		t.Error("transactional mode called UpdateItem")
	}
}

func TestBadOrdersAndLedgerErrors(t *testing.T) {
	r := newRun(t, consumer.ModeLease, "")
	bad := events.SQSMessage{MessageId: "bad", Body: fmt.Sprintf(`{%q:"o-1","amountCents":-5}`, contract.KeyField)}
	if failed := r.deliver(t, bad); !slices.Equal(failed, []string{"bad"}) {
		t.Errorf("negative amount: failed %v", failed)
	}
	r.ledger.fail = errors.New("ledger down")
	if failed := r.deliver(t, message(t, "m1", "o-2", 0)); !slices.Equal(failed, []string{"m1"}) {
		t.Errorf("ledger down: failed %v", failed)
	}
	r.ledger.fail = nil
	if failed := r.deliver(t, message(t, "m2", "o-2", 0)); len(failed) != 0 || r.ledger.count("o-2") != 1 {
		t.Errorf("after the ledger is back: failed %v, issued %d", failed, r.ledger.count("o-2"))
	}
}

// TestLedgerTimeoutIsReconciled: a ledger write that failed although it
// was applied (a timeout after DynamoDB applied it) is not applied again:
// the next delivery reads the ledger first, finds the card issued, and
// writes the receipt (the double effect of lease mode without reconcile).
func TestLedgerTimeoutIsReconciled(t *testing.T) {
	r := newRun(t, consumer.ModeLease, "")
	r.ledger.fail, r.ledger.applied = context.DeadlineExceeded, true
	if failed := r.deliver(t, message(t, "m1", "o-1", 0)); !slices.Equal(failed, []string{"m1"}) {
		t.Fatalf("timed out: failed %v", failed)
	}
	r.ledger.fail, r.ledger.applied = nil, false
	if failed := r.deliver(t, message(t, "m2", "o-1", 0)); len(failed) != 0 {
		t.Fatalf("after the timeout: failed %v", failed)
	}
	if n := r.ledger.count("o-1"); n != 1 || r.ledger.reads != 1 {
		t.Fatalf("issued %d, %d ledger reads; want 1 issuance, reconciled by 1 read", n, r.ledger.reads)
	}
	// A new order reads nothing: reconciling is only for unknown outcomes.
	r.deliver(t, message(t, "m3", "o-2", 0))
	if r.ledger.reads != 1 {
		t.Fatalf("%d ledger reads after a new order; want still 1", r.ledger.reads)
	}
}

// TestEffectURL: the effect POSTs each issuance with its key and attempt,
// once.
func TestEffectURL(t *testing.T) {
	var mu sync.Mutex
	var posts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		posts = append(posts, r.Header.Get("Idempotency-Key")+" attempt "+r.Header.Get("Fencing-Token"))
	}))
	defer srv.Close()
	r := newRun(t, consumer.ModeLease, srv.URL+"/effect")
	r.deliver(t, message(t, "m1", "o-1", 0))
	r.deliver(t, message(t, "m2", "o-1", 0))
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(posts, []string{"o-1 attempt 1"}) {
		t.Errorf("posts = %v, want one with the key and attempt 1", posts)
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
		{"ledger", consumer.ModeLease, map[string]string{contract.EnvLedgerTable: "l"}, nil},
		{"no ledger", consumer.ModeLease, nil, []string{contract.EnvLedgerTable}},
		{"url", consumer.ModeLease, map[string]string{contract.EnvLedgerTable: "l", contract.EnvEffectURL: "https://x.example"}, nil},
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
