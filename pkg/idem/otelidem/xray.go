package otelidem

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// xrayHeader is the name of X-Ray's trace header.
const xrayHeader = "X-Amzn-Trace-Id"

// XRay is a propagator that reads AWS X-Ray's trace header,
// "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
// which SQS keeps in a message's AWSTraceHeader system attribute when the
// sender had an X-Ray context (an instrumented SDK, or a Lambda function
// sending in its invocation). A Tracer shows that attribute to its
// propagator under the header's name, X-Amzn-Trace-Id.
//
// XRay only reads: a producer cannot set a system attribute through
// message attributes, and MessageAttributes sends W3C's traceparent. It
// stands in for the contrib module go.opentelemetry.io/contrib/propagators/aws,
// deprecated without an owner, which a reader of one header does not need.
type XRay struct{}

var _ propagation.TextMapPropagator = XRay{}

// Inject does nothing; see XRay.
func (XRay) Inject(context.Context, propagation.TextMapCarrier) {}

// Extract returns ctx with the remote span context of the header, or ctx
// as it is when the header is absent or malformed.
func (XRay) Extract(ctx context.Context, c propagation.TextMapCarrier) context.Context {
	sc := parseXRay(c.Get(xrayHeader))
	if !sc.IsValid() {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}

// Fields returns the header XRay reads.
func (XRay) Fields() []string { return []string{xrayHeader} }

// parseXRay reads the header's Root, Parent and Sampled fields, in any
// order, and skips the others (Lineage, Self). An X-Ray trace id is a W3C
// one written differently: version 1, then its first 4 bytes (a timestamp)
// and its last 12, in hex. Sampled=? (the decision left to the receiver)
// is not sampled: the receiver decides. It returns an invalid span context
// when a field it needs is missing or malformed.
func parseXRay(header string) trace.SpanContext {
	var cfg trace.SpanContextConfig
	for field := range strings.SplitSeq(header, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(field), "=")
		switch name {
		case "Root":
			version, id, _ := strings.Cut(value, "-")
			epoch, unique, _ := strings.Cut(id, "-")
			if version != "1" || len(epoch) != 8 || len(unique) != 24 {
				return trace.SpanContext{}
			}
			cfg.TraceID, _ = trace.TraceIDFromHex(epoch + unique)
		case "Parent":
			cfg.SpanID, _ = trace.SpanIDFromHex(value)
		case "Sampled":
			if value == "1" {
				cfg.TraceFlags = trace.FlagsSampled
			}
		}
	}
	return trace.NewSpanContext(cfg)
}
