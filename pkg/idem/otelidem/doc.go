// Package otelidem traces exactly-once effects with OpenTelemetry: a span per
// SQS batch and per record, the Guard's outcomes as span events, and the
// producer's trace context carried through the message, so that one order
// can be followed from the producer's send through SQS to the effect. It is
// a module of its own so that package idem and sqsbatch stay free of
// OpenTelemetry.
//
// Three pieces, used together or alone:
//
//   - [Tracer], an sqsbatch.Tracer: sqsbatch.WithTracer(tracer).
//   - [Observe], an idem.Observer: idem.WithObserver(otelidem.Observe)
//     adds each outcome to the span in the call's context, with or
//     without sqsbatch.
//   - [MessageAttributes], for the producer: the trace context of the send
//     as SQS message attributes.
//
// # Spans
//
// The batch span, "sqs batch <queue>", kind Consumer, has
// messaging.system=aws_sqs, messaging.destination.name,
// messaging.operation.name and .type=process,
// messaging.batch.message_count, and at its end idem.batch.failures (the
// records reported as batch item failures). It links to the producer
// context of every record that carries one, as the messaging conventions
// ask of a span that processes a batch. Its status is Error only when
// Handle fails the whole batch (every record failed on the store,
// error.type=store_down): failed records are routine, they come back.
//
// A record span, "sqs record <queue>", kind Consumer, has the same
// messaging attributes, messaging.message.id, idem.receive_count (SQS's
// ApproximateReceiveCount: above 1, a redelivery), and at its end
// idem.outcome ("executed", "duplicate", "in_progress", ..., "skipped" for a
// record not run because an earlier one of its group failed),
// idem.attempts, idem.failed, idem.requeued (true for a copy sent to its
// queue again, sqsbatch.WithRequeue), and idem.storage_key with
// [WithStorageKey].
// A failed record's span, and an Unconfirmed one's (done, but its receipt is
// missing), has status Error and error.type: the effect's error type as
// idem.ErrorClass writes it, "panic", or the outcome. The span's context is
// the one the record's work runs under, so the effect's own spans are its
// children, and [Observe] adds "idem.<outcome>" events to it.
//
// # Parent or link
//
// A record span's parent is the producer's span when the message carries a
// sampled producer context: one order is then one trace, from the send to
// the effect's calls, and every redelivery of it lands in the same trace,
// which is where "did it happen twice?" is answered. The record span links
// to the batch span, and the batch span back to the producers. When the
// message carries no producer context, or one whose trace is not recorded
// (Sampled=0: a producer Lambda function without active tracing still
// sends an AWSTraceHeader), the parent is the batch span, with a link to
// the producer's context if any: a parent-based sampler would otherwise
// drop the consumer's spans on the producer's word.
//
// # Where the context comes from
//
// W3C traceparent and tracestate, message attributes of type String that
// [MessageAttributes] writes; and X-Ray's header, which SQS keeps in the
// AWSTraceHeader system attribute when the sender had an X-Ray context
// ([XRay] reads it). When a message has both, traceparent wins: it is the
// producer's own send span. [WithPropagator] replaces the default.
//
// # Data
//
// No span carries a message body or an idempotency key (often a business
// identifier); the storage key is hashed unless the Guard uses plain keys.
// A failed record's status says the error's type, not its text, unless
// [WithErrorText] says otherwise.
//
// # Wiring in Lambda
//
// Export over OTLP to a collector running as a Lambda extension (the AWS
// Distro for OpenTelemetry layer, which forwards to X-Ray or any OTLP
// backend), and flush at the end of each invocation: Lambda freezes the
// process between invocations, and spans still in the batcher would wait,
// or be lost with the instance. otellambda (from
// go.opentelemetry.io/contrib/instrumentation/github.com/aws/aws-lambda-go/otellambda)
// starts the invocation's span, the batch span's parent, and flushes:
//
//	exp, err := otlptracehttp.New(ctx) // the layer's collector: localhost:4318
//	...
//	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
//	otel.SetTracerProvider(tp)
//	guard, err := idem.New(store, "gift-cards", idem.WithObserver(otelidem.Observe))
//	...
//	tracer, err := otelidem.NewTracer(otelidem.WithStorageKey(guard.StorageKey))
//	...
//	h, err := sqsbatch.New(guard, key, issueGiftCard, sqsbatch.WithTracer(tracer))
//	...
//	lambda.Start(otellambda.InstrumentHandler(h.Handle,
//		otellambda.WithTracerProvider(tp), otellambda.WithFlusher(tp)))
//
// The producer sends the context with each message (see
// [MessageAttributes]) and, to be one trace with the consumer, uses the same
// exporter. With X-Ray active tracing on the functions, Lambda records its
// own segments too, and SQS passes the sender's X-Ray context on as
// AWSTraceHeader.
package otelidem
