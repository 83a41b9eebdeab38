package otelidem

import (
	"errors"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// What the spans say. Where OpenTelemetry's semantic conventions have a
// name (messaging.*, error.type) it is used; the rest is under "idem.", so
// that it can never collide with a later convention. No attribute carries a
// message body or an idempotency key.
const (
	outcomeKey      = attribute.Key("idem.outcome")
	attemptsKey     = attribute.Key("idem.attempts")
	failedKey       = attribute.Key("idem.failed")
	requeuedKey     = attribute.Key("idem.requeued")
	storageKeyKey   = attribute.Key("idem.storage_key")
	receiveCountKey = attribute.Key("idem.receive_count")
	failuresKey     = attribute.Key("idem.batch.failures")
	namespaceKey    = attribute.Key("idem.namespace")
	cachedKey       = attribute.Key("idem.cached")
	durationKey     = attribute.Key("idem.duration") // seconds, as the conventions measure time
)

// processing is what every span of this package is, in the messaging
// conventions' terms: an SQS consumer processing messages of a queue.
func processing(queue string) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		semconv.MessagingSystemAWSSQS,
		semconv.MessagingOperationName("process"),
		semconv.MessagingOperationTypeProcess,
	}
	if queue != "" {
		attrs = append(attrs, semconv.MessagingDestinationName(queue))
	}
	return attrs
}

// recordAttributes describe a record before it runs.
func recordAttributes(msg events.SQSMessage) []attribute.KeyValue {
	attrs := append(processing(queueName(msg.EventSourceARN)), semconv.MessagingMessageID(msg.MessageId))
	// A count above 1 is a redelivery: the copy that meets a receipt, or
	// that comes back after a failure.
	if n, err := strconv.Atoi(msg.Attributes["ApproximateReceiveCount"]); err == nil {
		attrs = append(attrs, receiveCountKey.Int(n))
	}
	return attrs
}

// queueName is the last part of an SQS queue ARN
// (arn:aws:sqs:region:account:name), "" when there is none.
func queueName(arn string) string {
	if i := strings.LastIndexByte(arn, ':'); i >= 0 {
		return arn[i+1:]
	}
	return ""
}

// queueOf is the queue of a batch: a batch comes from one event source.
func queueOf(ev events.SQSEvent) string {
	if len(ev.Records) == 0 {
		return ""
	}
	return queueName(ev.Records[0].EventSourceARN)
}

func spanName(operation, queue string) string {
	if queue == "" {
		return operation
	}
	return operation + " " + queue
}

// outcomeName is a record's outcome; "skipped" for a record that did not
// run because an earlier record of its group or key failed.
func outcomeName(o idem.Outcome) string {
	if o == 0 {
		return "skipped"
	}
	return o.String()
}

// errorType is a failed record's error.type: low in cardinality and never
// the error's text. For the effect's own error it is the error's type as
// idem.ErrorClass gives it, the same words the FAILED record keeps by
// default; otherwise the outcome says what went wrong.
func errorType(r sqsbatch.RecordResult) string {
	switch {
	case errors.Is(r.Err, sqsbatch.ErrPanic):
		return "panic"
	case r.Outcome == idem.Failed:
		return idem.ErrorClass(r.Err)
	default:
		return outcomeName(r.Outcome)
	}
}

// batchErrorType is the error.type of a batch whose Handle returned an
// error.
func batchErrorType(err error) string {
	if errors.Is(err, sqsbatch.ErrStoreDown) {
		return "store_down"
	}
	return idem.ErrorClass(err)
}
