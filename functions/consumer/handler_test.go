package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

// fakeLedger applies ADD issued :one per UpdateItem, like DynamoDB would.
type fakeLedger struct {
	mu     sync.Mutex
	issued map[string]int
	fail   map[string]error // by order id
}

func (l *fakeLedger) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.fail[orderIDOf(in.Key)]; err != nil {
		return nil, err
	}
	if l.issued == nil {
		l.issued = map[string]int{}
	}
	l.issued[orderIDOf(in.Key)]++
	return &dynamodb.UpdateItemOutput{}, nil
}

func orderIDOf(key map[string]types.AttributeValue) string {
	if s, ok := key["orderId"].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

func (l *fakeLedger) count(orderID string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.issued[orderID]
}

type harness struct {
	c       *Consumer
	store   *idemtest.MemoryStore
	ledger  *fakeLedger
	metrics *bytes.Buffer
	logs    *bytes.Buffer
}

func baseEnv() map[string]string {
	return map[string]string{contract.EnvIdemTable: "idem", contract.EnvLedgerTable: "ledger"}
}

// newHarness builds the consumer as main does, without the fault wrapper.
func newHarness(t *testing.T, env map[string]string) *harness {
	return newWrappedHarness(t, env, nil)
}

// newWrappedHarness builds the consumer with wrap, if not nil, around the
// effect, where main puts the fault wrapper.
func newWrappedHarness(t *testing.T, env map[string]string, wrap func(Effect, *slog.Logger) Effect) *harness {
	t.Helper()
	cfg, err := contract.LoadConsumer(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{store: idemtest.NewMemoryStore(), ledger: &fakeLedger{}, metrics: &bytes.Buffer{}, logs: &bytes.Buffer{}}
	log := slog.New(slog.NewJSONHandler(&lockedWriter{w: h.logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var effect Effect = NewGiftCards(h.ledger, cfg.LedgerTable, cfg.EffectURL, http.DefaultClient)
	if wrap != nil {
		effect = wrap(effect, log)
	}
	h.c, err = NewConsumer(cfg, h.store, effect, log, h.metrics)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// deliver runs one batch and returns the failed message ids and the metric
// values of the EMF line it wrote.
func (h *harness) deliver(t *testing.T, msgs ...events.SQSMessage) ([]string, map[string]float64) {
	t.Helper()
	h.metrics.Reset()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: "req-1"})
	resp, err := h.c.Handle(ctx, events.SQSEvent{Records: msgs})
	if err != nil {
		t.Fatalf("Handle returned %v, want nil", err)
	}
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	slices.Sort(failed)
	var doc map[string]any
	if err := json.Unmarshal(h.metrics.Bytes(), &doc); err != nil {
		t.Fatalf("EMF line is not one JSON object: %v\n%s", err, h.metrics.String())
	}
	values := map[string]float64{}
	for _, name := range contract.OutcomeMetrics() {
		v, ok := doc[name].(float64)
		if !ok {
			t.Fatalf("EMF line has no value for %s: %s", name, h.metrics.String())
		}
		values[name] = v
	}
	return failed, values
}

func order(messageID, orderID string) events.SQSMessage {
	return orderWithBody(messageID, orderID, fmt.Sprintf(`{"orderId":%q,"customer":"c-1","amountCents":500}`, orderID))
}

func orderWithBody(messageID, orderID, body string) events.SQSMessage {
	m := events.SQSMessage{MessageId: messageID, Body: body}
	if orderID != "" {
		m.MessageAttributes = map[string]events.SQSMessageAttribute{
			"orderId": {DataType: "String", StringValue: &orderID},
		}
	}
	return m
}

func TestConsumerOutcomes(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		prepare func(t *testing.T, h *harness)
		msg     events.SQSMessage
		failed  bool
		metric  string
		issued  int // ledger count for o-1 afterwards
		logs    string
	}{
		{name: "executed", msg: order("m1", "o-1"), metric: "Executed", issued: 1},
		{
			name:    "duplicate",
			prepare: func(t *testing.T, h *harness) { h.deliver(t, order("m0", "o-1")) },
			msg:     order("m1", "o-1"), metric: "Duplicate", issued: 1,
		},
		{
			name: "in progress",
			prepare: func(t *testing.T, h *harness) {
				now := time.Now()
				g, _ := idem.New(h.store, "consumer")
				_, ok, err := h.store.Acquire(context.Background(), idem.Acquisition{
					Key: g.StorageKey("o-1"), Lease: "other", LeaseUntil: now.Add(time.Hour),
					ExpiresAt: now.Add(time.Hour), Now: now,
				})
				if !ok || err != nil {
					t.Fatal(ok, err)
				}
			},
			msg: order("m1", "o-1"), failed: true, metric: "InProgress", logs: "in progress elsewhere",
		},
		{
			name:    "effect failure",
			prepare: func(t *testing.T, h *harness) { h.ledger.fail = map[string]error{"o-1": errors.New("ledger down")} },
			msg:     order("m1", "o-1"), failed: true, metric: "Failed", logs: "ledger down",
		},
		{
			name:    "payload mismatch",
			prepare: func(t *testing.T, h *harness) { h.deliver(t, order("m0", "o-1")) },
			msg:     orderWithBody("m1", "o-1", `{"orderId":"o-1","customer":"c-1","amountCents":999}`),
			failed:  true, metric: "Mismatch", issued: 1, logs: "same key, different payload",
		},
		{
			name: "malformed body", msg: orderWithBody("m1", "o-1", `{"orderId": "o-1", "amountCents": "lots`),
			failed: true, metric: "Rejected", logs: "malformed order",
		},
		{
			name: "body and attribute disagree", msg: orderWithBody("m1", "o-1", `{"orderId":"o-2"}`),
			failed: true, metric: "Rejected", logs: "differs",
		},
		{
			name: "missing key", msg: orderWithBody("m1", "", `{"customer":"c-1"}`),
			failed: true, metric: "Rejected", logs: "no idempotency key",
		},
		{
			name: "key from the body", msg: orderWithBody("m1", "", `{"orderId":"o-1","amountCents":1}`),
			metric: "Executed", issued: 1,
		},
		{
			name: "transactional executed", env: map[string]string{"IDEM_MODE": "transactional"},
			msg: order("m1", "o-1"), metric: "Executed",
		},
		{
			name: "transactional malformed", env: map[string]string{"IDEM_MODE": "transactional"},
			msg: orderWithBody("m1", "o-1", `nope`), failed: true, metric: "Rejected", logs: "malformed order",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := baseEnv()
			for k, v := range tt.env {
				env[k] = v
			}
			h := newHarness(t, env)
			if tt.prepare != nil {
				tt.prepare(t, h)
			}
			h.logs.Reset()
			failed, metrics := h.deliver(t, tt.msg, order("healthy", "o-healthy"))
			var want []string
			if tt.failed {
				want = []string{"m1"}
			}
			if !slices.Equal(failed, want) {
				t.Errorf("failed = %v, want %v", failed, want)
			}
			want1 := 1.0
			if tt.metric == "Executed" {
				want1++ // the healthy record
			}
			if metrics[tt.metric] != want1 || (tt.metric != "Executed" && metrics["Executed"] != 1) {
				t.Errorf("metrics = %v, want %s = %v, Executed for the healthy record", metrics, tt.metric, want1)
			}
			if metrics["Executed"]+metrics["Duplicate"]+metrics["InProgress"]+metrics["Failed"]+
				metrics["LeaseLost"]+metrics["Mismatch"]+metrics["Rejected"]+metrics["Skipped"] != 2 {
				t.Errorf("metrics = %v, want 2 records counted", metrics)
			}
			if got := h.ledger.count("o-1"); got != tt.issued {
				t.Errorf("ledger issued = %d, want %d", got, tt.issued)
			}
			if tt.logs != "" && !strings.Contains(h.logs.String(), tt.logs) {
				t.Errorf("logs do not mention %q:\n%s", tt.logs, h.logs.String())
			}
			if strings.Contains(h.logs.String(), `"customer"`) || strings.Contains(h.logs.String(), "c-1") {
				t.Errorf("a body was logged without LOG_BODIES:\n%s", h.logs.String())
			}
		})
	}
}

// TestTransactionalOnce delivers the same order three times, twice in one
// batch: the ledger update is committed once.
func TestTransactionalOnce(t *testing.T) {
	env := baseEnv()
	env["IDEM_MODE"] = "transactional"
	env["IDEM_CACHE_SIZE"] = "0" // make every duplicate go to the store
	h := newHarness(t, env)
	failed, _ := h.deliver(t, order("m1", "o-1"), order("m2", "o-1"))
	if len(failed) > 1 {
		t.Fatalf("failed = %v, want at most one (the concurrent copy, in progress)", failed)
	}
	failed, m := h.deliver(t, order("m3", "o-1"))
	if len(failed) != 0 || m["Duplicate"] != 1 {
		t.Fatalf("redelivery: failed %v, metrics %v; want a duplicate", failed, m)
	}
	writes := h.store.Writes()
	if len(writes) != 1 {
		t.Fatalf("%d writes committed, want 1", len(writes))
	}
	w, ok := writes[0].(types.TransactWriteItem)
	if !ok || w.Update == nil {
		t.Fatalf("write is %T %+v, want a TransactWriteItem with an Update", writes[0], writes[0])
	}
	if got := orderIDOf(w.Update.Key); got != "o-1" || *w.Update.TableName != "ledger" {
		t.Errorf("update of %q in %q, want o-1 in ledger", got, *w.Update.TableName)
	}
	if !strings.Contains(*w.Update.UpdateExpression, "ADD") {
		t.Errorf("update expression %q does not ADD", *w.Update.UpdateExpression)
	}
	if h.ledger.count("o-1") != 0 {
		t.Error("transactional mode called UpdateItem")
	}
}

func TestEMF(t *testing.T) {
	h := newHarness(t, baseEnv())
	h.deliver(t, order("m1", "o-1"))
	var doc struct {
		AWS struct {
			Timestamp         int64
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name, Unit string }
			}
		} `json:"_aws"`
		Namespace string
		Executed  int
	}
	line := h.metrics.String()
	if strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "\n") {
		t.Fatalf("want exactly one line, got %q", line)
	}
	if err := json.Unmarshal([]byte(line), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.AWS.Timestamp < time.Now().Add(-time.Minute).UnixMilli() {
		t.Errorf("timestamp %d is not in milliseconds", doc.AWS.Timestamp)
	}
	if len(doc.AWS.CloudWatchMetrics) != 1 {
		t.Fatalf("directives = %+v", doc.AWS.CloudWatchMetrics)
	}
	d := doc.AWS.CloudWatchMetrics[0]
	if d.Namespace != contract.MetricNamespace || !slices.Equal(d.Dimensions[0], []string{"FunctionName", "Namespace"}) {
		t.Errorf("directive = %+v", d)
	}
	var names []string
	for _, m := range d.Metrics {
		if m.Unit != "Count" {
			t.Errorf("metric %s unit %q", m.Name, m.Unit)
		}
		names = append(names, m.Name)
	}
	for _, want := range []string{"Executed", "Duplicate", "InProgress", "Failed", "LeaseLost", "Mismatch"} {
		if !slices.Contains(names, want) {
			t.Errorf("metric %s missing from %v", want, names)
		}
	}
	if doc.Executed != 1 || doc.Namespace != "consumer" {
		t.Errorf("values: Executed %d, Namespace %q", doc.Executed, doc.Namespace)
	}
}

// TestEffectURL: the effect POSTs each issuance with its key and attempt.
func TestEffectURL(t *testing.T) {
	var mu sync.Mutex
	var posts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		posts = append(posts, r.Header.Get("Idempotency-Key")+" attempt "+r.Header.Get("Fencing-Token"))
	}))
	defer srv.Close()
	env := baseEnv()
	env[contract.EnvEffectURL] = srv.URL + "/effect"
	h := newHarness(t, env)
	h.deliver(t, order("m1", "o-1"))
	h.deliver(t, order("m2", "o-1"))
	if !slices.Equal(posts, []string{"o-1 attempt 1"}) {
		t.Errorf("posts = %v, want one with the key and attempt 1", posts)
	}
}

func TestLogBodies(t *testing.T) {
	env := baseEnv()
	env["LOG_BODIES"] = "true"
	h := newHarness(t, env)
	h.deliver(t, orderWithBody("m1", "o-1", `{"orderId":"o-1","amountCents":"x"}`), order("m2", "o-2"))
	logs := h.logs.String()
	if !strings.Contains(logs, `amountCents`) || !strings.Contains(logs, "req-1") {
		t.Errorf("the failed record's body or the request id is not logged:\n%s", logs)
	}
	if strings.Contains(logs, "c-1") {
		t.Errorf("the body of a successful record was logged:\n%s", logs)
	}
}
