package otelidem

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/propagation"
)

// The trace context travels with a message in two ways. The producer puts
// W3C's traceparent and tracestate in message attributes of type String
// (MessageAttributes). SQS itself keeps the sender's X-Ray context, when
// the sender had one, in the AWSTraceHeader system attribute.

// awsTraceHeader is the SQS system attribute that holds X-Ray's header.
const awsTraceHeader = "AWSTraceHeader"

// MessageAttributes returns the trace context of ctx's span as SQS message
// attributes for a producer to send with a message: traceparent, and
// tracestate when the span has one, both of data type String; empty when
// ctx has no span. Each is one of the 10 message attributes SQS allows, and
// its name, data type and value count towards the message size (72
// bytes for traceparent). With aws-sdk-go-v2:
//
//	for name, value := range otelidem.MessageAttributes(ctx) {
//		input.MessageAttributes[name] = types.MessageAttributeValue{
//			DataType: aws.String("String"), StringValue: aws.String(value),
//		}
//	}
//
// The map keeps the SQS SDK out of this module, and serves a producer on
// any SDK, or behind SNS with raw message delivery, alike. It is always
// W3C, whatever the global propagator: it is what a Tracer reads by
// default. For another format, call that propagator's Inject with a
// propagation.MapCarrier and send its entries the same way.
func MessageAttributes(ctx context.Context) map[string]string {
	attrs := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, attrs)
	return attrs
}

// carrier shows a received message to a propagator: its message attributes
// of type String by name, and its AWSTraceHeader system attribute under
// X-Ray's header name. It is read-only.
type carrier struct{ msg *events.SQSMessage }

var _ propagation.TextMapCarrier = carrier{}

func (c carrier) Get(key string) string {
	if strings.EqualFold(key, xrayHeader) {
		return c.msg.Attributes[awsTraceHeader]
	}
	a, ok := c.msg.MessageAttributes[key]
	if !ok || a.StringValue == nil || !isString(a.DataType) {
		return ""
	}
	return *a.StringValue
}

// Set does nothing: a received message cannot be changed.
func (carrier) Set(string, string) {}

func (c carrier) Keys() []string {
	keys := slices.Collect(maps.Keys(c.msg.MessageAttributes))
	keys = slices.DeleteFunc(keys, func(k string) bool { return c.Get(k) == "" })
	if c.msg.Attributes[awsTraceHeader] != "" {
		keys = append(keys, xrayHeader)
	}
	return keys
}

// isString reports whether an attribute's data type is String, or a custom
// type based on it ("String.TraceParent").
func isString(dataType string) bool {
	return dataType == "String" || strings.HasPrefix(dataType, "String.")
}
