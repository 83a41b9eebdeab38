package esm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/exactlyonce/sqsidem/integration/internal/lambdarun"
)

var _ Invoker = (*lambdarun.Pool)(nil)

// fakeSQS is an in-memory queue with visibility timeouts.
type fakeSQS struct {
	mu         sync.Mutex
	msgs       []*fakeMsg
	seq        int
	visibility time.Duration
	receives   []*sqs.ReceiveMessageInput
	deleted    []string // message ids
}

type fakeMsg struct {
	id, body     string
	attrs        map[string]types.MessageAttributeValue
	receiveCount int
	invisible    time.Time
	handle       string
}

func newFake() *fakeSQS { return &fakeSQS{visibility: time.Hour} }

func (f *fakeSQS) send(body string, attrs map[string]types.MessageAttributeValue) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	id := fmt.Sprintf("m%03d", f.seq)
	f.msgs = append(f.msgs, &fakeMsg{id: id, body: body, attrs: attrs})
	return id
}

func (f *fakeSQS) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	deadline := time.Now().Add(time.Duration(in.WaitTimeSeconds) * time.Second)
	for {
		f.mu.Lock()
		f.receives = append(f.receives, in)
		var out []types.Message
		now := time.Now()
		for _, m := range f.msgs {
			if len(out) == int(in.MaxNumberOfMessages) {
				break
			}
			if m.invisible.After(now) {
				continue
			}
			m.receiveCount++
			m.invisible = now.Add(f.visibility)
			m.handle = fmt.Sprintf("%s-r%d", m.id, m.receiveCount)
			out = append(out, types.Message{
				MessageId:     aws.String(m.id),
				ReceiptHandle: aws.String(m.handle),
				Body:          aws.String(m.body),
				MD5OfBody:     aws.String("md5-" + m.id),
				Attributes: map[string]string{
					"ApproximateReceiveCount":          fmt.Sprint(m.receiveCount),
					"SentTimestamp":                    "1700000000000",
					"SenderId":                         "AIDAEXAMPLE",
					"ApproximateFirstReceiveTimestamp": "1700000000001",
				},
				MessageAttributes: m.attrs,
			})
		}
		f.mu.Unlock()
		if len(out) > 0 || !time.Now().Before(deadline) {
			return &sqs.ReceiveMessageOutput{Messages: out}, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (f *fakeSQS) DeleteMessageBatch(_ context.Context, in *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := &sqs.DeleteMessageBatchOutput{}
	for _, e := range in.Entries {
		idx := slices.IndexFunc(f.msgs, func(m *fakeMsg) bool { return m.handle == aws.ToString(e.ReceiptHandle) })
		if idx < 0 {
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("ReceiptHandleIsInvalid")})
			continue
		}
		f.deleted = append(f.deleted, f.msgs[idx].id)
		f.msgs = slices.Delete(f.msgs, idx, idx+1)
		out.Successful = append(out.Successful, types.DeleteMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

func (f *fakeSQS) deletedIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := slices.Clone(f.deleted)
	slices.Sort(d)
	return d
}

// invokerFunc adapts a function to Invoker and records the events.
type invokerFunc func(ctx context.Context, ev events.SQSEvent) ([]byte, error)

func (f invokerFunc) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	var ev events.SQSEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, err
	}
	return f(ctx, ev)
}

const arn = "arn:aws:sqs:eu-west-1:000000000000:orders"

// runUntil runs the poller until cond holds (or fails the test after 5s).
func runUntil(t *testing.T, p *Poller, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			cancel()
			stopped(t, done)
			t.Fatalf("condition not met; stats %+v", p.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := stopped(t, done); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// stopped waits for Run, cancelled, to return its error (done), at most
// stopLimit.
func stopped(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(stopLimit):
		t.Fatalf("Run did not return %s after its context was cancelled", stopLimit)
		return nil
	}
}

const stopLimit = 10 * time.Second

func TestEventShapeAndDeleteAll(t *testing.T) {
	q := newFake()
	q.send("hello", map[string]types.MessageAttributeValue{
		"tenant": {DataType: aws.String("String"), StringValue: aws.String("acme")},
		"blob":   {DataType: aws.String("Binary"), BinaryValue: []byte{1, 2}},
	})
	q.send("world", nil)
	var raw atomic.Value
	p := &Poller{
		Client: q, QueueURL: "http://q/orders", QueueARN: arn, BatchSize: 5, WaitTime: 50 * time.Millisecond,
		Invoker: rawInvoker(func(payload []byte) ([]byte, error) { raw.Store(payload); return []byte("null"), nil }),
	}
	runUntil(t, p, func() bool { return p.Stats().Deleted == 2 })

	var ev map[string][]map[string]any
	if err := json.Unmarshal(raw.Load().([]byte), &ev); err != nil {
		t.Fatal(err)
	}
	r := ev["Records"][0]
	if r["messageId"] != "m001" || r["receiptHandle"] != "m001-r1" || r["body"] != "hello" || r["md5OfBody"] != "md5-m001" ||
		r["eventSource"] != "aws:sqs" || r["eventSourceARN"] != arn || r["awsRegion"] != "eu-west-1" {
		t.Fatalf("record fields: %v", r)
	}
	attrs := r["attributes"].(map[string]any)
	if attrs["ApproximateReceiveCount"] != "1" || attrs["SentTimestamp"] != "1700000000000" || attrs["SenderId"] != "AIDAEXAMPLE" {
		t.Fatalf("attributes: %v", attrs)
	}
	ma := r["messageAttributes"].(map[string]any)
	tenant := ma["tenant"].(map[string]any)
	blob := ma["blob"].(map[string]any)
	if tenant["stringValue"] != "acme" || tenant["dataType"] != "String" || blob["binaryValue"] != "AQI=" || tenant["stringListValues"] == nil {
		t.Fatalf("messageAttributes: %v", ma)
	}
	in := q.receives[0]
	if in.MaxNumberOfMessages != 5 || in.MessageSystemAttributeNames[0] != types.MessageSystemAttributeNameAll || in.MessageAttributeNames[0] != "All" {
		t.Fatalf("receive input: %+v", in)
	}
	if s := p.Stats(); s.Batches != 1 || s.Received != 2 || s.Deleted != 2 {
		t.Fatalf("stats %+v", s)
	}
}

type rawInvoker func(payload []byte) ([]byte, error)

func (f rawInvoker) Invoke(_ context.Context, payload []byte) ([]byte, error) { return f(payload) }

func TestPartialBatchFailure(t *testing.T) {
	q := newFake()
	for i := range 3 {
		q.send(fmt.Sprint(i), nil)
	}
	var results []BatchResult
	p := &Poller{
		Client: q, QueueURL: "u", QueueARN: arn, BatchSize: 10, WaitTime: 50 * time.Millisecond, ReportBatchItemFailures: true,
		Invoker: invokerFunc(func(_ context.Context, ev events.SQSEvent) ([]byte, error) {
			return json.Marshal(events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: ev.Records[1].MessageId}}})
		}),
		OnBatch: func(r BatchResult) { results = append(results, r) },
	}
	runUntil(t, p, func() bool { return p.Stats().Deleted == 2 })
	if got := q.deletedIDs(); !slices.Equal(got, []string{"m001", "m003"}) {
		t.Fatalf("deleted %v", got)
	}
	if s := p.Stats(); s.FailedReturned != 1 {
		t.Fatalf("stats %+v", s)
	}
	if len(results) != 1 || !slices.Equal(results[0].Failed, []string{"m002"}) || results[0].Deleted != 2 {
		t.Fatalf("results %+v", results)
	}
}

func TestWholeBatchFailures(t *testing.T) {
	cases := map[string]struct {
		out     string
		err     error
		report  bool
		deleted int
	}{
		"unknown itemIdentifier": {out: `{"batchItemFailures":[{"itemIdentifier":"nope"}]}`, report: true},
		"empty itemIdentifier":   {out: `{"batchItemFailures":[{"itemIdentifier":""}]}`, report: true},
		"bad key name":           {out: `{"batchItemFailures":[{"itemId":"m001"}]}`, report: true},
		"invalid json":           {out: `not json`, report: true},
		"function error":         {err: errors.New("boom"), report: true},
		"empty list is success":  {out: `{"batchItemFailures":[]}`, report: true, deleted: 2},
		"empty object success":   {out: `{}`, report: true, deleted: 2},
		"null is success":        {out: `null`, report: true, deleted: 2},
		"failures ignored w/o reporting": {
			out: `{"batchItemFailures":[{"itemIdentifier":"m001"}]}`, report: false, deleted: 2,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			q := newFake()
			q.send("a", nil)
			q.send("b", nil)
			p := &Poller{
				Client: q, QueueURL: "u", QueueARN: arn, WaitTime: 50 * time.Millisecond, ReportBatchItemFailures: tc.report,
				Invoker: rawInvoker(func([]byte) ([]byte, error) { return []byte(tc.out), tc.err }),
			}
			runUntil(t, p, func() bool { return p.Stats().Batches >= 1 })
			if got := len(q.deletedIDs()); got != tc.deleted {
				t.Fatalf("deleted %d, want %d; stats %+v", got, tc.deleted, p.Stats())
			}
		})
	}
}

func TestInvokeErrorCountsAndRedelivers(t *testing.T) {
	q := newFake()
	q.visibility = 20 * time.Millisecond // let the message come back quickly
	q.send("x", nil)
	var calls atomic.Int32
	var counts []string
	var mu sync.Mutex
	p := &Poller{
		Client: q, QueueURL: "u", QueueARN: arn, WaitTime: 50 * time.Millisecond,
		Invoker: invokerFunc(func(_ context.Context, ev events.SQSEvent) ([]byte, error) {
			mu.Lock()
			counts = append(counts, ev.Records[0].Attributes["ApproximateReceiveCount"])
			mu.Unlock()
			if calls.Add(1) == 1 {
				return nil, errors.New("crashed")
			}
			return nil, nil
		}),
	}
	runUntil(t, p, func() bool { return p.Stats().Deleted == 1 })
	if s := p.Stats(); s.InvokeErrors != 1 || s.Batches != 2 {
		t.Fatalf("stats %+v", s)
	}
	if !slices.Equal(counts, []string{"1", "2"}) {
		t.Fatalf("receive counts %v", counts)
	}
}

func TestConcurrencyAndBatchingWindow(t *testing.T) {
	q := newFake()
	for range 75 {
		q.send("m", nil)
	}
	var inFlight, peak atomic.Int32
	var sizes []int
	var mu sync.Mutex
	p := &Poller{
		Client: q, QueueURL: "u", QueueARN: arn, BatchSize: 25, MaxBatchingWindow: 500 * time.Millisecond,
		MaxConcurrency: 3, WaitTime: 50 * time.Millisecond,
		Invoker: rawInvoker(func(payload []byte) ([]byte, error) {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for {
				old := peak.Load()
				if n <= old || peak.CompareAndSwap(old, n) {
					break
				}
			}
			var ev events.SQSEvent
			_ = json.Unmarshal(payload, &ev)
			mu.Lock()
			sizes = append(sizes, len(ev.Records))
			mu.Unlock()
			time.Sleep(100 * time.Millisecond)
			return nil, nil
		}),
	}
	runUntil(t, p, func() bool { return p.Stats().Deleted == 75 })
	if peak.Load() < 2 || peak.Load() > 3 {
		t.Fatalf("peak concurrency %d", peak.Load())
	}
	for _, s := range sizes {
		if s > 25 {
			t.Fatalf("batch of %d > BatchSize", s)
		}
	}
	// Each receive returns at most 10, so batches above 10 prove the window works.
	if slices.Max(sizes) <= 10 {
		t.Fatalf("batching window never merged receives: %v", sizes)
	}
}

func TestGracefulStopFinishesInFlight(t *testing.T) {
	q := newFake()
	q.send("slow", nil)
	started := make(chan struct{})
	p := &Poller{
		Client: q, QueueURL: "u", QueueARN: arn, WaitTime: 50 * time.Millisecond,
		Invoker: invokerFunc(func(ctx context.Context, _ events.SQSEvent) ([]byte, error) {
			close(started)
			time.Sleep(100 * time.Millisecond)
			return nil, ctx.Err() // the invocation context must not be cancelled by Run's
		}),
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	select {
	case <-started:
	case <-time.After(stopLimit):
		t.Fatal("no invocation started")
	}
	cancel()
	if err := stopped(t, done); err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); s.Deleted != 1 || s.InvokeErrors != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestConfigValidation(t *testing.T) {
	if err := (&Poller{}).Run(context.Background()); err == nil {
		t.Fatal("want error for empty poller")
	}
	p := &Poller{Client: newFake(), QueueURL: "u", Invoker: rawInvoker(nil), BatchSize: 20}
	if err := p.Run(context.Background()); err == nil {
		t.Fatal("want error for BatchSize > 10 without window")
	}
}
