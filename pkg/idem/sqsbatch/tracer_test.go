package sqsbatch_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

type spanKey struct{}

// spans is a Tracer that records what it was told.
type spans struct {
	mu      sync.Mutex
	batches int
	ended   map[string]sqsbatch.RecordResult
	resp    events.SQSEventResponse
}

func (s *spans) Batch(ctx context.Context, _ events.SQSEvent) (context.Context, func(events.SQSEventResponse, error)) {
	s.mu.Lock()
	s.batches++
	s.mu.Unlock()
	return context.WithValue(ctx, spanKey{}, "batch"), func(resp events.SQSEventResponse, _ error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.resp = resp
	}
}

func (s *spans) Record(ctx context.Context, msg events.SQSMessage) (context.Context, func(sqsbatch.RecordResult)) {
	if ctx.Value(spanKey{}) != "batch" {
		panic("record span outside its batch")
	}
	return context.WithValue(ctx, spanKey{}, msg.MessageId), func(r sqsbatch.RecordResult) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.ended == nil {
			s.ended = map[string]sqsbatch.RecordResult{}
		}
		s.ended[msg.MessageId] = r
	}
}

func TestTracerSeesBatchAndRecords(t *testing.T) {
	var tr spans
	var effectSpans []any
	h, err := sqsbatch.New(newGuard(t, idemtest.NewMemoryStore()), sqsbatch.Attribute("id"),
		func(ctx context.Context, _ string, _ events.SQSMessage) ([]byte, error) {
			effectSpans = append(effectSpans, ctx.Value(spanKey{})) // one unit: no concurrency
			return nil, nil
		}, sqsbatch.WithLogger(quiet), sqsbatch.WithTracer(&tr))
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		msg("m1", "k", "b"), msg("m2", "k", "b"), msg("m3", "", "b"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if tr.batches != 1 || len(tr.ended) != 3 || len(tr.resp.BatchItemFailures) != 1 {
		t.Fatalf("batches %d, records ended %v, response %v", tr.batches, tr.ended, tr.resp)
	}
	if tr.ended["m1"].Outcome != idem.Executed || tr.ended["m2"].Outcome != idem.Duplicate || !tr.ended["m3"].Failed {
		t.Fatalf("record results %+v", tr.ended)
	}
	if len(effectSpans) != 1 || effectSpans[0] != "m1" {
		t.Fatalf("the effect ran under %v, want the record's context (m1)", effectSpans)
	}
}

// panicky is a Tracer that panics in one place: "batch", "batch end",
// "record" or "record end".
type panicky struct{ where string }

func (p panicky) Batch(ctx context.Context, _ events.SQSEvent) (context.Context, func(events.SQSEventResponse, error)) {
	if p.where == "batch" {
		panic("tracer bug in Batch")
	}
	return ctx, func(events.SQSEventResponse, error) {
		if p.where == "batch end" {
			panic("tracer bug in the batch's end")
		}
	}
}

func (p panicky) Record(ctx context.Context, _ events.SQSMessage) (context.Context, func(sqsbatch.RecordResult)) {
	if p.where == "record" {
		panic("tracer bug in Record")
	}
	return ctx, func(sqsbatch.RecordResult) {
		if p.where == "record end" {
			panic("tracer bug in the record's end")
		}
	}
}

// TestTracerPanics: a Tracer that panics is logged, and the batch goes on
// untraced: the response lists exactly the failed records, and every effect
// ran once.
func TestTracerPanics(t *testing.T) {
	for _, where := range []string{"batch", "batch end", "record", "record end"} {
		t.Run(where, func(t *testing.T) {
			var logs bytes.Buffer
			var ran atomic.Int32
			h, err := sqsbatch.New(newGuard(t, idemtest.NewMemoryStore()), sqsbatch.Attribute("id"),
				func(context.Context, string, events.SQSMessage) ([]byte, error) { ran.Add(1); return nil, nil },
				sqsbatch.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))), sqsbatch.WithTracer(panicky{where}))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
				msg("m1", "k1", "b"), msg("m2", "", "b"), msg("m3", "k2", "b"), msg("m4", "k1", "b"),
			}})
			if err != nil || !equal(failures(resp), []string{"m2"}) || ran.Load() != 2 {
				t.Fatalf("failures %v, %v, effects %d; want only m2 failed, 2 effects", failures(resp), err, ran.Load())
			}
			if !strings.Contains(logs.String(), `"level":"ERROR","msg":"tracer panicked"`) {
				t.Fatalf("log:\n%s\nwant an ERROR line: tracer panicked", logs.String())
			}
		})
	}
}
