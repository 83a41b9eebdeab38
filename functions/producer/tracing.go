package main

import (
	"context"
	"errors"
	"strings"

	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/exactlyonce/sqsidem/functions/internal/tracing"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/otelidem"
)

// scopeName is the instrumentation scope of the producer's spans.
const scopeName = "github.com/exactlyonce/sqsidem/functions/producer"

// traceWith makes the producer trace its sends with tp: a span per message
// sent, "sqs send <queue>", kind Producer, whose context the message
// carries to the consumer as W3C traceparent (otelidem.MessageAttributes),
// so that the consumer's record span is its child. Nothing is traced, and
// no attribute added, when tp is off (tracing.Enabled).
func (p *Producer) traceWith(tp trace.TracerProvider) {
	if tracing.Enabled(tp) {
		p.tracer = tp.Tracer(scopeName)
	}
}

// startSend starts the send span of e, a message its Guard is about to
// send, and gives e the span's context to carry. end ends the span with
// the send's result (the SQS message id, or why it was not sent).
func (p *Producer) startSend(ctx context.Context, e *entry) (_ context.Context, end func(messageID []byte, err error)) {
	if p.tracer == nil {
		return ctx, func([]byte, error) {}
	}
	queue := queueName(p.queueURL)
	ctx, span := p.tracer.Start(ctx, "sqs send "+queue, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(
		semconv.MessagingSystemAWSSQS,
		semconv.MessagingOperationName("send"),
		semconv.MessagingOperationTypeSend,
		semconv.MessagingDestinationName(queue),
	))
	e.carry(otelidem.MessageAttributes(ctx))
	return ctx, func(messageID []byte, err error) {
		defer span.End()
		if err != nil {
			kind := sendErrorType(err)
			span.SetAttributes(semconv.ErrorTypeKey.String(kind))
			span.SetStatus(codes.Error, kind) // not the text: it may name the key
			return
		}
		span.SetAttributes(semconv.MessagingMessageID(string(messageID)))
	}
}

// sendErrorType is a failed send's error.type: low in cardinality, never
// the error's text.
func sendErrorType(err error) string {
	switch {
	case errors.Is(err, ErrTooLarge):
		return "too_large"
	case errors.Is(err, ErrSendUnknown):
		return "send_unknown"
	case errors.Is(err, ErrSend):
		return "send_failed"
	default:
		return idem.ErrorClass(err)
	}
}

// queueName is the last part of a queue URL
// (https://sqs.region.amazonaws.com/account/name).
func queueName(url string) string {
	return url[strings.LastIndexByte(url, '/')+1:]
}
