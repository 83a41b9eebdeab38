package otelidem_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// downStore fails every acquire, as a store that is down does.
type downStore struct{ idem.Store }

func (downStore) Acquire(context.Context, idem.Acquisition) (idem.Record, bool, error) {
	return idem.Record{}, false, errors.New("connection refused")
}

func only(t *testing.T, spans tracetest.SpanStubs, match func(tracetest.SpanStub) bool) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range spans {
		if match(s) {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d matching spans, want 1, among %d", len(found), len(spans))
	}
	return found[0]
}

func children(spans tracetest.SpanStubs, parent trace.SpanID) []tracetest.SpanStub {
	var found []tracetest.SpanStub
	for _, s := range spans {
		if s.Parent.SpanID() == parent {
			found = append(found, s)
		}
	}
	return found
}

func hasAttr(attrs []attribute.KeyValue, key attribute.Key, value string) bool {
	for _, a := range attrs {
		if a.Key == key && a.Value.String() == value {
			return true
		}
	}
	return false
}

func wantAttrs(t *testing.T, what string, attrs []attribute.KeyValue, want map[attribute.Key]attribute.Value) {
	t.Helper()
	got := attribute.NewSet(attrs...)
	for k, v := range want {
		if g, ok := got.Value(k); !ok || g != v {
			t.Errorf("%s: %s = %v, want %v", what, k, g.String(), v.String())
		}
	}
}

func linkedSpans(links []sdktrace.Link) []trace.SpanID {
	ids := make([]trace.SpanID, 0, len(links))
	for _, l := range links {
		ids = append(ids, l.SpanContext.SpanID())
	}
	return ids
}
