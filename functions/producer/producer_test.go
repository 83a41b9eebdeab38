package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

// waitLimit bounds every wait of these tests: a test that would block
// fails instead, saying what it waited for.
const waitLimit = 30 * time.Second

// fakeSQS accepts messages, except the entries it is told to fail.
type fakeSQS struct {
	mu       sync.Mutex
	calls    []int          // entries per call
	received map[string]int // key → messages accepted
	bodies   map[string]string
	failLeft map[string]int // key → entries still to fail
	sender   map[string]bool
	gate     chan struct{} // when set, calls wait for it to close (or waitLimit)
}

var _ SQS = (*fakeSQS)(nil)

func (f *fakeSQS) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-time.After(waitLimit):
			return nil, errors.New("fakeSQS: gate never opened")
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(in.Entries) > maxBatch {
		return nil, fmt.Errorf("too many entries: %d", len(in.Entries))
	}
	f.calls = append(f.calls, len(in.Entries))
	if f.received == nil {
		f.received, f.bodies = map[string]int{}, map[string]string{}
	}
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		attr := e.MessageAttributes[keyAttribute]
		id := aws.ToString(attr.StringValue)
		if aws.ToString(attr.DataType) != "String" || id == "" {
			return nil, errors.New("entry without the key attribute")
		}
		if f.sender[id] || f.failLeft[id] > 0 {
			f.failLeft[id]--
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{
				Id: e.Id, Code: aws.String("InternalError"), Message: aws.String("try again"), SenderFault: f.sender[id],
			})
			continue
		}
		f.received[id]++
		f.bodies[id] = aws.ToString(e.MessageBody)
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{
			Id: e.Id, MessageId: aws.String("msg-" + id),
		})
	}
	return out, nil
}

func (f *fakeSQS) stats() (calls []int, received map[string]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	received = map[string]int{}
	for k, v := range f.received {
		received[k] = v
	}
	return append([]int(nil), f.calls...), received
}

// newProducer builds the producer as main does, without the fault wrapper,
// with extra added to a minimal environment.
func newProducer(t *testing.T, store idem.Store, client SQS, extra map[string]string) *Producer {
	t.Helper()
	env := map[string]string{consumer.EnvTable: "idem", contract.EnvQueueURL: "https://sqs.eu-west-1.amazonaws.com/1/orders"}
	maps.Copy(env, extra)
	cfg, err := contract.LoadProducer(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProducer(cfg, store, client, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	p.backoff = time.Millisecond
	p.linger = time.Minute // batches go when full or when every worker waits: never on a timer, however loaded the machine
	return p
}

// messages is the input of one message per key.
func messages(keys ...string) Input {
	var in Input
	for _, k := range keys {
		in.Messages = append(in.Messages, json.RawMessage(fmt.Sprintf(`{%q: %q, "customer": "c", "amountCents": 100}`, contract.KeyField, k)))
	}
	return in
}

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint(prefix, i)
	}
	return out
}

func run(t *testing.T, p *Producer, in Input) Output {
	t.Helper()
	out, err := p.Handle(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSendBatchesAndRerun(t *testing.T) {
	store, client := idemtest.NewMemoryStore(), &fakeSQS{}
	p := newProducer(t, store, client, nil)
	in := messages(ids("o-", 25)...)

	out := run(t, p, in)
	if out.Sent != 25 || out.Failed != 0 || len(out.Failures) != 0 {
		t.Fatalf("first run = %+v, want 25 sent", out)
	}
	calls, received := client.stats()
	if len(calls) != 3 {
		t.Errorf("%d SendMessageBatch calls %v, want 3 for 25 orders", len(calls), calls)
	}
	for id, n := range received {
		if n != 1 {
			t.Errorf("order %s sent %d times", id, n)
		}
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(client.bodies["o-7"]), &body); err != nil || body[contract.KeyField] != "o-7" ||
		strings.Contains(client.bodies["o-7"], " ") {
		t.Errorf("body %q, want the compact order", client.bodies["o-7"])
	}

	// A re-triggered producer, with the input formatted differently.
	in2 := Input{}
	for _, id := range ids("o-", 25) {
		in2.Messages = append(in2.Messages, json.RawMessage(fmt.Sprintf("{\n  %q:%q,\"customer\":\"c\",\n \"amountCents\":100}", contract.KeyField, id)))
	}
	out = run(t, p, in2)
	if out.Duplicates != 25 || out.Sent != 0 {
		t.Errorf("re-run = %+v, want 25 duplicates", out)
	}
	if calls2, _ := client.stats(); len(calls2) != len(calls) {
		t.Errorf("re-run made %d more SendMessageBatch calls", len(calls2)-len(calls))
	}
}

func TestConcurrentRunsInProgress(t *testing.T) {
	store, client := idemtest.NewMemoryStore(), &fakeSQS{gate: make(chan struct{})}
	p := newProducer(t, store, client, nil)
	in := messages("a", "b", "c")
	first := make(chan Output, 1)
	go func() {
		out, _ := p.Handle(context.Background(), in) // no t.Fatal off the test goroutine
		first <- out
	}()

	// Wait until the first run holds the three records (it acquires
	// them concurrently: one held says nothing of the others, on a loaded
	// machine).
	g, _ := idem.New(store, contract.ProducerNamespace)
	held := func() bool {
		for _, k := range []string{"a", "b", "c"} {
			rec, ok, _ := store.Get(context.Background(), g.StorageKey(k))
			if !ok || rec.Status != idem.StatusInProgress {
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(waitLimit); !held(); {
		if time.Now().After(deadline) {
			t.Fatal("first run did not acquire")
		}
		time.Sleep(time.Millisecond)
	}
	second := run(t, p, in)
	if second.InProgress != 3 {
		t.Errorf("second run = %+v, want 3 in progress", second)
	}
	close(client.gate)
	select {
	case out := <-first:
		if out.Sent != 3 {
			t.Errorf("first run = %+v, want 3 sent", out)
		}
	case <-time.After(waitLimit):
		t.Fatal("the first run did not return after the gate opened")
	}
}

func TestPartialBatchFailure(t *testing.T) {
	store := idemtest.NewMemoryStore()
	client := &fakeSQS{
		failLeft: map[string]int{"flaky": 2, "down": 100},
		sender:   map[string]bool{"invalid": true},
	}
	p := newProducer(t, store, client, nil)
	out := run(t, p, messages("ok-1", "flaky", "down", "invalid", "ok-2"))
	if out.Sent != 3 || out.Failed != 2 {
		t.Fatalf("out = %+v, want 3 sent (flaky retried) and 2 failed", out)
	}
	for _, f := range out.Failures {
		if f.Key != "down" && f.Key != "invalid" || !strings.Contains(f.Reason, ErrSend.Error()) {
			t.Errorf("failure %+v", f)
		}
	}
	_, received := client.stats()
	if received["flaky"] != 1 {
		t.Errorf("flaky sent %d times, want 1", received["flaky"])
	}
	if left := client.failLeft["down"]; left != 100-3 {
		t.Errorf("down tried %d times, want 3", 100-left)
	}
	if client.failLeft["invalid"] != -1 {
		t.Errorf("invalid (sender fault) tried %d times, want 1", -client.failLeft["invalid"])
	}

	// The failed orders were released: the next run sends them, and only them.
	g, _ := idem.New(store, contract.ProducerNamespace)
	if rec, _, _ := store.Get(context.Background(), g.StorageKey("down")); rec.Status != idem.StatusFailed {
		t.Errorf("record of a failed send is %s, want FAILED", rec.Status)
	}
	client.mu.Lock()
	client.failLeft, client.sender = nil, nil
	client.mu.Unlock()
	out = run(t, p, messages("ok-1", "flaky", "down", "invalid", "ok-2"))
	if out.Sent != 2 || out.Duplicates != 3 {
		t.Errorf("second run = %+v, want the 2 failed sent, 3 duplicates", out)
	}
}

func TestBadMessages(t *testing.T) {
	client := &fakeSQS{}
	p := newProducer(t, idemtest.NewMemoryStore(), client, nil)
	in := Input{Messages: []json.RawMessage{
		json.RawMessage(`{"customer": "no key"}`),
		json.RawMessage(fmt.Sprintf(`{%q: true}`, contract.KeyField)),
		json.RawMessage(`"just a string"`),
		json.RawMessage(fmt.Sprintf(`{%q: "good"}`, contract.KeyField)),
	}}
	out := run(t, p, in)
	if out.Sent != 1 || out.Failed != 3 {
		t.Errorf("out = %+v, want 1 sent, 3 failed", out)
	}
	for _, f := range out.Failures {
		if !strings.Contains(f.Reason, ErrBadMessage.Error()) {
			t.Errorf("failure %+v, want a bad message", f)
		}
	}
	if out := run(t, p, Input{}); out.Sent+out.Failed != 0 || out.Failures == nil {
		t.Errorf("empty input = %+v", out)
	}
}

func TestFIFOQueue(t *testing.T) {
	client := &recordingSQS{}
	p := newProducer(t, idemtest.NewMemoryStore(), client, map[string]string{contract.EnvQueueURL: "https://sqs.eu-west-1.amazonaws.com/1/orders.fifo"})
	run(t, p, messages("a"))
	e := client.in.Entries[0]
	if aws.ToString(e.MessageGroupId) != "a" || aws.ToString(e.MessageDeduplicationId) != "a" {
		t.Errorf("entry %+v, want group and deduplication id = key", e)
	}
}

type recordingSQS struct{ in *sqs.SendMessageBatchInput }

func (r *recordingSQS) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	r.in = in
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id, MessageId: aws.String("m")})
	}
	return out, nil
}
