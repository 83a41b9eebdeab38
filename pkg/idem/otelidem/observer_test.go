package otelidem_test

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
	"github.com/exactlyonce/sqsidem/pkg/idem/otelidem"
)

// TestObserve: a Guard used without sqsbatch annotates the caller's span.
func TestObserve(t *testing.T) {
	tp, exp := newProvider(t)
	g, err := idem.New(idemtest.NewMemoryStore(), "mail", idem.WithObserver(otelidem.Observe), idem.WithCache(10))
	if err != nil {
		t.Fatal(err)
	}
	ctx, span := tp.Tracer("caller").Start(context.Background(), "send welcome mail")
	ok := func(context.Context) ([]byte, error) { return nil, nil }
	for range 2 {
		if _, err := g.Do(ctx, "u-1", nil, ok); err != nil {
			t.Fatal(err)
		}
	}
	_, err = g.Do(ctx, "u-2", nil, func(context.Context) ([]byte, error) { return nil, declined{} })
	if !errors.As(err, new(declined)) {
		t.Fatalf("Do: %v", err)
	}
	span.End()
	// No span in the context: nothing to annotate, nothing to fail.
	if _, err := g.Do(context.Background(), "u-3", nil, ok); err != nil {
		t.Fatal(err)
	}

	events := only(t, exp.GetSpans(), func(s tracetest.SpanStub) bool { return s.Name == "send welcome mail" }).Events
	want := []struct {
		name   string
		cached bool
		extra  map[attribute.Key]attribute.Value
	}{
		{"idem.executed", false, nil},
		{"idem.duplicate", true, nil},
		{"idem.failed", false, map[attribute.Key]attribute.Value{"error.type": attribute.StringValue("otelidem_test.declined")}},
	}
	if len(events) != len(want) {
		t.Fatalf("events %v, want %d", events, len(want))
	}
	for i, w := range want {
		e := events[i]
		attrs := map[attribute.Key]attribute.Value{
			"idem.namespace": attribute.StringValue("mail"),
			"idem.attempts":  attribute.IntValue(1),
			"idem.cached":    attribute.BoolValue(w.cached),
		}
		for k, v := range w.extra {
			attrs[k] = v
		}
		if e.Name != w.name {
			t.Errorf("event %d: %s, want %s", i, e.Name, w.name)
		}
		wantAttrs(t, e.Name, e.Attributes, attrs)
		set := attribute.NewSet(e.Attributes...)
		if d, ok := set.Value("idem.duration"); !ok || d.AsFloat64() < 0 {
			t.Errorf("%s: duration %v", e.Name, d.String())
		}
	}
}
