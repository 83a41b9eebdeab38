package sqsbatch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

const fifoARN = "arn:aws:sqs:eu-west-1:123456789012:orders.fifo"

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// msg builds a record keyed by the message attribute "id".
func msg(messageID, key, body string) events.SQSMessage {
	m := events.SQSMessage{
		MessageId:      messageID,
		Body:           body,
		EventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:orders",
	}
	if key != "" {
		m.MessageAttributes = map[string]events.SQSMessageAttribute{
			"id": {DataType: "String", StringValue: &key},
		}
	}
	return m
}

func fifo(messageID, group, key string) events.SQSMessage {
	m := msg(messageID, key, "body-"+key)
	m.EventSourceARN = fifoARN
	m.Attributes = map[string]string{"MessageGroupId": group}
	return m
}

func failures(resp events.SQSEventResponse) []string {
	ids := make([]string, 0, len(resp.BatchItemFailures))
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	slices.Sort(ids)
	return ids
}

// recorder collects the records passed to the hook.
type recorder struct {
	mu      sync.Mutex
	records map[string]sqsbatch.RecordResult
	calls   int
}

func (r *recorder) hook(_ context.Context, rec sqsbatch.RecordResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.records == nil {
		r.records = make(map[string]sqsbatch.RecordResult)
	}
	r.records[rec.MessageID] = rec
	r.calls++
}

func newGuard(t *testing.T, store idem.Store) *idem.Guard {
	t.Helper()
	g, err := idem.New(store, "test")
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestHandleOneRecord runs one record of each kind next to a healthy record
// and checks that only the record itself is affected.
func TestHandleOneRecord(t *testing.T) {
	errBoom := errors.New("boom")
	tests := []struct {
		name string
		// prepare runs before the batch, e.g. to leave a record in the store.
		prepare func(t *testing.T, g *idem.Guard, s *idemtest.MemoryStore)
		record  events.SQSMessage
		effect  func() ([]byte, error)
		outcome idem.Outcome
		failed  bool
		err     error
		runs    int // effect runs for the record
	}{
		{
			name:    "new key executes",
			record:  msg("m1", "k1", "b1"),
			outcome: idem.Executed,
			runs:    1,
		},
		{
			name: "duplicate succeeds without running",
			prepare: func(t *testing.T, g *idem.Guard, _ *idemtest.MemoryStore) {
				do(t, g, "k1", "b1")
			},
			record:  msg("m1", "k1", "b1"),
			outcome: idem.Duplicate,
		},
		{
			name: "in progress elsewhere fails",
			prepare: func(t *testing.T, g *idem.Guard, s *idemtest.MemoryStore) {
				now := time.Now()
				_, ok, err := s.Acquire(context.Background(), idem.Acquisition{
					Key: g.StorageKey("k1"), Lease: "other", LeaseUntil: now.Add(time.Hour),
					ExpiresAt: now.Add(24 * time.Hour), Now: now,
				})
				if err != nil || !ok {
					t.Fatalf("acquire: %v %v", ok, err)
				}
			},
			record:  msg("m1", "k1", "b1"),
			outcome: idem.InProgress,
			failed:  true,
			err:     idem.ErrInProgress,
		},
		{
			name:    "effect error fails",
			record:  msg("m1", "k1", "b1"),
			effect:  func() ([]byte, error) { return nil, errBoom },
			outcome: idem.Failed,
			failed:  true,
			err:     errBoom,
			runs:    1,
		},
		{
			name:    "panic fails",
			record:  msg("m1", "k1", "b1"),
			effect:  func() ([]byte, error) { panic("kaboom") },
			outcome: idem.Failed,
			failed:  true,
			err:     sqsbatch.ErrPanic,
			runs:    1,
		},
		{
			name:    "missing key fails",
			record:  msg("m1", "", "b1"),
			outcome: idem.Rejected,
			failed:  true,
			err:     sqsbatch.ErrNoKey,
		},
		{
			name: "payload mismatch fails",
			prepare: func(t *testing.T, g *idem.Guard, _ *idemtest.MemoryStore) {
				do(t, g, "k1", "another body")
			},
			record:  msg("m1", "k1", "b1"),
			outcome: idem.Mismatch,
			failed:  true,
			err:     idem.ErrPayloadMismatch,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := idemtest.NewMemoryStore()
			g := newGuard(t, store)
			if tt.prepare != nil {
				tt.prepare(t, g, store)
			}
			var mu sync.Mutex
			runs := map[string]int{}
			fn := func(ctx context.Context, key string, m events.SQSMessage) ([]byte, error) {
				mu.Lock()
				runs[key]++
				mu.Unlock()
				if key == "k1" && tt.effect != nil {
					return tt.effect()
				}
				return []byte("ok"), nil
			}
			var rec recorder
			h, err := sqsbatch.New(g, sqsbatch.Attribute("id"), fn,
				sqsbatch.WithLogger(quiet), sqsbatch.WithRecordHook(rec.hook))
			if err != nil {
				t.Fatal(err)
			}
			ev := events.SQSEvent{Records: []events.SQSMessage{tt.record, msg("healthy", "k2", "b2")}}
			resp, err := h.Handle(context.Background(), ev)
			if err != nil {
				t.Fatalf("Handle returned %v, want nil", err)
			}
			var want []string
			if tt.failed {
				want = []string{"m1"}
			}
			if got := failures(resp); !slices.Equal(got, want) {
				t.Errorf("failures = %v, want %v", got, want)
			}
			if rec.calls != 2 {
				t.Errorf("hook called %d times, want 2", rec.calls)
			}
			r := rec.records["m1"]
			if r.Outcome != tt.outcome || r.Failed != tt.failed {
				t.Errorf("record = %+v, want outcome %v failed %v", r, tt.outcome, tt.failed)
			}
			if tt.err != nil && !errors.Is(r.Err, tt.err) {
				t.Errorf("record error = %v, want %v", r.Err, tt.err)
			}
			if tt.err == nil && r.Err != nil {
				t.Errorf("record error = %v, want nil", r.Err)
			}
			if runs["k1"] != tt.runs {
				t.Errorf("effect ran %d times for the record, want %d", runs["k1"], tt.runs)
			}
			if h := rec.records["healthy"]; h.Failed || h.Outcome != idem.Executed || runs["k2"] != 1 {
				t.Errorf("healthy record = %+v (runs %d), want executed once", h, runs["k2"])
			}
		})
	}
}

func do(t *testing.T, g *idem.Guard, key, payload string) {
	t.Helper()
	_, err := g.Do(context.Background(), key, []byte(payload), func(context.Context) ([]byte, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
}

func TestHandleEmptyEvent(t *testing.T) {
	h, err := sqsbatch.New(newGuard(t, idemtest.NewMemoryStore()), sqsbatch.MessageID,
		func(context.Context, string, events.SQSMessage) ([]byte, error) {
			t.Error("effect ran for an empty event")
			return nil, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := h.Handle(context.Background(), events.SQSEvent{})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Errorf("Handle(empty) = %+v, %v; want no failures, nil", resp, err)
	}
}

// TestRedelivery delivers the same batch twice: the effects run once, and
// both deliveries succeed.
func TestRedelivery(t *testing.T) {
	g := newGuard(t, idemtest.NewMemoryStore())
	var runs atomic.Int32
	h, err := sqsbatch.New(g, sqsbatch.MessageID, func(context.Context, string, events.SQSMessage) ([]byte, error) {
		runs.Add(1)
		return nil, nil
	}, sqsbatch.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	ev := events.SQSEvent{Records: []events.SQSMessage{msg("a", "", "1"), msg("b", "", "2"), msg("c", "", "3")}}
	for i := range 2 {
		resp, err := h.Handle(context.Background(), ev)
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("delivery %d: %+v, %v", i, resp, err)
		}
	}
	if runs.Load() != 3 {
		t.Errorf("effects ran %d times, want 3", runs.Load())
	}
}

func TestFIFO(t *testing.T) {
	g := newGuard(t, idemtest.NewMemoryStore())
	var mu sync.Mutex
	order := map[string][]string{} // group → keys in the order they ran
	fn := func(ctx context.Context, key string, m events.SQSMessage) ([]byte, error) {
		time.Sleep(time.Millisecond) // let groups interleave
		mu.Lock()
		group := m.Attributes["MessageGroupId"]
		order[group] = append(order[group], key)
		mu.Unlock()
		if key == "a2" {
			return nil, errors.New("a2 fails")
		}
		return nil, nil
	}
	var rec recorder
	h, err := sqsbatch.New(g, sqsbatch.Attribute("id"), fn, sqsbatch.WithLogger(quiet),
		sqsbatch.WithConcurrency(4), sqsbatch.WithRecordHook(rec.hook))
	if err != nil {
		t.Fatal(err)
	}
	ev := events.SQSEvent{Records: []events.SQSMessage{
		fifo("1", "A", "a1"), fifo("2", "B", "b1"), fifo("3", "A", "a2"),
		fifo("4", "B", "b2"), fifo("5", "A", "a3"), fifo("6", "C", "c1"),
		fifo("7", "B", "b3"), fifo("8", "A", "a4"),
	}}
	resp, err := h.Handle(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := failures(resp), []string{"3", "5", "8"}; !slices.Equal(got, want) {
		t.Errorf("failures = %v, want %v", got, want)
	}
	want := map[string][]string{"A": {"a1", "a2"}, "B": {"b1", "b2", "b3"}, "C": {"c1"}}
	for group, keys := range want {
		if !slices.Equal(order[group], keys) {
			t.Errorf("group %s ran %v, want %v", group, order[group], keys)
		}
	}
	for _, id := range []string{"5", "8"} {
		if r := rec.records[id]; !errors.Is(r.Err, sqsbatch.ErrGroupFailed) || r.Outcome != 0 {
			t.Errorf("record %s = %+v, want skipped with ErrGroupFailed", id, r)
		}
	}
	if rec.calls != len(ev.Records) {
		t.Errorf("hook called %d times, want %d", rec.calls, len(ev.Records))
	}
}

func TestConcurrencyBound(t *testing.T) {
	for _, fifoQueue := range []bool{false, true} {
		t.Run(fmt.Sprintf("fifo=%v", fifoQueue), func(t *testing.T) {
			const limit = 4
			var cur, peak atomic.Int32
			fn := func(context.Context, string, events.SQSMessage) ([]byte, error) {
				n := cur.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				time.Sleep(5 * time.Millisecond)
				cur.Add(-1)
				return nil, nil
			}
			h, err := sqsbatch.New(newGuard(t, idemtest.NewMemoryStore()), sqsbatch.MessageID, fn,
				sqsbatch.WithConcurrency(limit), sqsbatch.WithLogger(quiet))
			if err != nil {
				t.Fatal(err)
			}
			var ev events.SQSEvent
			for i := range 40 {
				m := msg(fmt.Sprint("m", i), "", fmt.Sprint(i))
				if fifoQueue {
					m = fifo(m.MessageId, fmt.Sprint("g", i%10), "")
				}
				ev.Records = append(ev.Records, m)
			}
			resp, err := h.Handle(context.Background(), ev)
			if err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("Handle = %+v, %v", resp, err)
			}
			if p := peak.Load(); p > limit || p < 2 {
				t.Errorf("peak concurrency = %d, want 2..%d", p, limit)
			}
		})
	}
}

func TestTransactional(t *testing.T) {
	store := idemtest.NewMemoryStore()
	g := newGuard(t, store)
	var calls atomic.Int32
	h, err := sqsbatch.NewTx(g, sqsbatch.Attribute("id"), func(ctx context.Context, key string, m events.SQSMessage) (idem.TxEffect, error) {
		calls.Add(1)
		if key == "bad" {
			return idem.TxEffect{}, errors.New("cannot build the writes")
		}
		return idem.TxEffect{Writes: []any{"ledger+1 " + key}, Result: []byte(key)}, nil
	}, sqsbatch.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	ev := events.SQSEvent{Records: []events.SQSMessage{msg("1", "k1", "b1"), msg("2", "k2", "b2"), msg("3", "bad", "b3")}}
	for i := range 3 {
		resp, err := h.Handle(context.Background(), ev)
		if err != nil {
			t.Fatal(err)
		}
		if got := failures(resp); !slices.Equal(got, []string{"3"}) {
			t.Errorf("delivery %d: failures = %v, want [3]", i, got)
		}
	}
	writes := store.Writes()
	slices.SortFunc(writes, func(a, b any) int { return strings.Compare(a.(string), b.(string)) })
	if want := []any{"ledger+1 k1", "ledger+1 k2"}; !slices.Equal(writes, want) {
		t.Errorf("committed writes = %v, want %v (once per key)", writes, want)
	}
}

// TestLogs checks the log lines: request id, one line per failed record, no
// body.
func TestLogs(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	g := newGuard(t, idemtest.NewMemoryStore())
	h, err := sqsbatch.New(g, sqsbatch.Attribute("id"), func(_ context.Context, key string, _ events.SQSMessage) ([]byte, error) {
		if key == "bad" {
			return nil, errors.New("effect failed")
		}
		return nil, nil
	}, sqsbatch.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-123"})
	ev := events.SQSEvent{Records: []events.SQSMessage{msg("ok", "good", "SECRET-1"), msg("ko", "bad", "SECRET-2")}}
	if _, err := h.Handle(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "SECRET") {
		t.Errorf("a body was logged:\n%s", buf.String())
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d log lines, want 2:\n%s", len(lines), buf.String())
	}
	levels := map[string]string{}
	for _, line := range lines {
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatal(err)
		}
		if entry["request_id"] != "req-123" {
			t.Errorf("line without request id: %s", line)
		}
		if entry["storage_key"] != g.StorageKey(map[string]string{"ok": "good", "ko": "bad"}[entry["message_id"].(string)]) {
			t.Errorf("line without the storage key: %s", line)
		}
		levels[entry["message_id"].(string)] = entry["level"].(string)
	}
	if levels["ok"] != "INFO" || levels["ko"] != "ERROR" {
		t.Errorf("levels = %v, want ok INFO, ko ERROR", levels)
	}
}

func TestNewValidates(t *testing.T) {
	g := newGuard(t, idemtest.NewMemoryStore())
	fn := func(context.Context, string, events.SQSMessage) ([]byte, error) { return nil, nil }
	tests := []struct {
		name string
		new  func() (*sqsbatch.Handler, error)
	}{
		{"nil guard", func() (*sqsbatch.Handler, error) { return sqsbatch.New(nil, sqsbatch.MessageID, fn) }},
		{"nil key", func() (*sqsbatch.Handler, error) { return sqsbatch.New(g, nil, fn) }},
		{"nil func", func() (*sqsbatch.Handler, error) { return sqsbatch.New(g, sqsbatch.MessageID, nil) }},
		{"nil tx func", func() (*sqsbatch.Handler, error) { return sqsbatch.NewTx(g, sqsbatch.MessageID, nil) }},
		{"zero concurrency", func() (*sqsbatch.Handler, error) {
			return sqsbatch.New(g, sqsbatch.MessageID, fn, sqsbatch.WithConcurrency(0))
		}},
		{"nil logger", func() (*sqsbatch.Handler, error) {
			return sqsbatch.New(g, sqsbatch.MessageID, fn, sqsbatch.WithLogger(nil))
		}},
	}
	for _, tt := range tests {
		if _, err := tt.new(); !errors.Is(err, idem.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", tt.name, err)
		}
	}
}

func TestKeyFuncs(t *testing.T) {
	str := func(s string) *string { return &s }
	withAttr := func(dataType string, v *string) events.SQSMessage {
		return events.SQSMessage{MessageAttributes: map[string]events.SQSMessageAttribute{
			"orderId": {DataType: dataType, StringValue: v},
		}}
	}
	body := func(b string) events.SQSMessage { return events.SQSMessage{Body: b} }
	orderKey := sqsbatch.FirstOf(sqsbatch.Attribute("orderId"), sqsbatch.JSONField("orderId"))
	tests := []struct {
		name    string
		fn      sqsbatch.KeyFunc
		msg     events.SQSMessage
		want    string
		wantErr error // nil: no error; errAny: an error not wrapping ErrNoKey
	}{
		{"message id", sqsbatch.MessageID, events.SQSMessage{MessageId: "m-1"}, "m-1", nil},
		{"no message id", sqsbatch.MessageID, events.SQSMessage{}, "", sqsbatch.ErrNoKey},
		{"string attribute", sqsbatch.Attribute("orderId"), withAttr("String", str("o-1")), "o-1", nil},
		{"custom string attribute", sqsbatch.Attribute("orderId"), withAttr("String.Order", str("o-1")), "o-1", nil},
		{"number attribute", sqsbatch.Attribute("orderId"), withAttr("Number", str("42")), "42", nil},
		{"binary attribute", sqsbatch.Attribute("orderId"), withAttr("Binary", str("x")), "", sqsbatch.ErrNoKey},
		{"empty attribute", sqsbatch.Attribute("orderId"), withAttr("String", str("")), "", sqsbatch.ErrNoKey},
		{"no attribute", sqsbatch.Attribute("orderId"), events.SQSMessage{}, "", sqsbatch.ErrNoKey},
		{"string field", sqsbatch.JSONField("orderId"), body(`{"orderId":"o-2","x":1}`), "o-2", nil},
		{"number field", sqsbatch.JSONField("orderId"), body(`{"orderId": 12345678901234567890}`), "12345678901234567890", nil},
		{"null field", sqsbatch.JSONField("orderId"), body(`{"orderId":null}`), "", sqsbatch.ErrNoKey},
		{"object field", sqsbatch.JSONField("orderId"), body(`{"orderId":{"a":1}}`), "", sqsbatch.ErrNoKey},
		{"empty field", sqsbatch.JSONField("orderId"), body(`{"orderId":""}`), "", sqsbatch.ErrNoKey},
		{"missing field", sqsbatch.JSONField("orderId"), body(`{}`), "", sqsbatch.ErrNoKey},
		{"malformed body", sqsbatch.JSONField("orderId"), body(`{"orderId":`), "", errAny},
		{"array body", sqsbatch.JSONField("orderId"), body(`["orderId"]`), "", errAny},
		{"first of: attribute wins", orderKey, func() events.SQSMessage {
			m := withAttr("String", str("from-attr"))
			m.Body = `{"orderId":"from-body"}`
			return m
		}(), "from-attr", nil},
		{"first of: body fallback", orderKey, body(`{"orderId":"from-body"}`), "from-body", nil},
		{"first of: none", orderKey, body(`{}`), "", sqsbatch.ErrNoKey},
		{"first of: nothing", sqsbatch.FirstOf(), body(`{}`), "", sqsbatch.ErrNoKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.fn(tt.msg)
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("err = %v, want nil", err)
			case tt.wantErr == errAny && (err == nil || errors.Is(err, sqsbatch.ErrNoKey)):
				t.Fatalf("err = %v, want an error other than ErrNoKey", err)
			case tt.wantErr != nil && tt.wantErr != errAny && !errors.Is(err, tt.wantErr):
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("key = %q, want %q", got, tt.want)
			}
		})
	}
}

var errAny = errors.New("any error")

// TestPanicsOutsideTheEffect: a key function or record hook that panics
// fails (or is logged for) its record only, never the batch.
func TestPanicsOutsideTheEffect(t *testing.T) {
	key := func(m events.SQSMessage) (string, error) {
		if m.MessageId == "bad" {
			panic("key function bug")
		}
		return m.MessageId, nil
	}
	hook := func(_ context.Context, r sqsbatch.RecordResult) {
		if r.MessageID == "hook" {
			panic("hook bug")
		}
	}
	var ran atomic.Int32
	h, err := sqsbatch.New(newGuard(t, idemtest.NewMemoryStore()), key,
		func(context.Context, string, events.SQSMessage) ([]byte, error) {
			ran.Add(1)
			return nil, nil
		}, sqsbatch.WithLogger(quiet), sqsbatch.WithRecordHook(hook))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		msg("bad", "", "x"), msg("hook", "", "y"), msg("ok", "", "z"),
	}})
	if err != nil || !slices.Equal(failures(resp), []string{"bad"}) || ran.Load() != 2 {
		t.Fatalf("failures %v, %v, effects %d; want only the record whose key function panicked", failures(resp), err, ran.Load())
	}
}

// TestSameKeyInOneBatch: two copies of a message in one batch of a standard
// queue run one after the other, so the copy is a duplicate at once and
// nothing comes back.
func TestSameKeyInOneBatch(t *testing.T) {
	var ran atomic.Int32
	var rec recorder
	h, err := sqsbatch.New(newGuard(t, idemtest.NewMemoryStore()), sqsbatch.Attribute("id"),
		func(context.Context, string, events.SQSMessage) ([]byte, error) {
			ran.Add(1)
			time.Sleep(20 * time.Millisecond) // long enough for a concurrent copy to see it in progress
			return nil, nil
		}, sqsbatch.WithLogger(quiet), sqsbatch.WithRecordHook(rec.hook))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		msg("m1", "order-1", "b"), msg("m2", "order-1", "b"), msg("m3", "order-2", "b"),
	}})
	if err != nil || len(resp.BatchItemFailures) != 0 || ran.Load() != 2 {
		t.Fatalf("failures %v, %v, effects %d; want none, 2 effects", failures(resp), err, ran.Load())
	}
	if o := rec.records["m2"].Outcome; o != idem.Duplicate {
		t.Fatalf("copy in the same batch: %v, want duplicate", o)
	}
}
