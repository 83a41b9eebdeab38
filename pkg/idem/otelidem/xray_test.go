package otelidem_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/exactlyonce/sqsidem/pkg/idem/otelidem"
)

func TestXRay(t *testing.T) {
	tests := []struct {
		header  string
		valid   bool
		sampled bool
	}{
		{xraySampled, true, true},
		{xrayUnsamp, true, false},
		{"Sampled=1; Parent=53995c3f42cd8ad8; Root=1-5759e988-bd862e3fe1be46a994272793", true, true},
		{"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=?", true, false},
		{"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8", true, false},
		{"Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1", false, false}, // no parent to continue
		{"Root=2-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1", false, false},
		{"Root=1-5759e988bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1", false, false},
		{"Root=1-5759e988-bd862e3fe1be46a99427279z;Parent=53995c3f42cd8ad8;Sampled=1", false, false},
		{"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f;Sampled=1", false, false},
		{"", false, false},
	}
	for _, tt := range tests {
		ctx := otelidem.XRay{}.Extract(context.Background(), propagation.MapCarrier{"X-Amzn-Trace-Id": tt.header})
		sc := trace.SpanContextFromContext(ctx)
		if sc.IsValid() != tt.valid || sc.IsSampled() != tt.sampled {
			t.Errorf("%q: valid %v sampled %v, want %v %v", tt.header, sc.IsValid(), sc.IsSampled(), tt.valid, tt.sampled)
		}
		if tt.valid && (sc.TraceID() != xrayTrace || sc.SpanID() != xraySpan || !sc.IsRemote()) {
			t.Errorf("%q: %s/%s remote %v", tt.header, sc.TraceID(), sc.SpanID(), sc.IsRemote())
		}
	}
}
