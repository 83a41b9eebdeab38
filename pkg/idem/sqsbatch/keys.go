package sqsbatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// ErrNoKey reports that a record carries no idempotency key where the
// KeyFunc looks for one. The record fails alone.
var ErrNoKey = errors.New("sqsbatch: no idempotency key")

// KeyFunc derives the idempotency key of a record. It returns an error
// wrapping ErrNoKey when the key is missing; an empty key with a nil error
// is treated the same way.
type KeyFunc func(events.SQSMessage) (string, error)

// MessageID keys records by their SQS message id. It catches redeliveries of
// one message by SQS, not a producer sending the same work twice: prefer a
// business id (Attribute, JSONField) when there is one.
//
// The id is OriginalMessageID's: a copy requeued by WithRequeue is a new
// message with a new id, and keyed by that it would run the effect a second
// time. A KeyFunc of your own that derives the key from the message id must
// read it with OriginalMessageID too.
func MessageID(msg events.SQSMessage) (string, error) {
	id := OriginalMessageID(msg)
	if id == "" {
		return "", fmt.Errorf("%w: empty message id", ErrNoKey)
	}
	return id, nil
}

// OriginalMessageID is the id of the message msg copies, when WithRequeue
// sent it (its MessageIDAttribute, a non-empty String), else msg's own id.
func OriginalMessageID(msg events.SQSMessage) string {
	if a, ok := msg.MessageAttributes[MessageIDAttribute]; ok && a.DataType == "String" && a.StringValue != nil && *a.StringValue != "" {
		return *a.StringValue
	}
	return msg.MessageId
}

// Attribute keys records by the message attribute name, of data type String
// or Number (custom types such as "String.OrderId" included).
func Attribute(name string) KeyFunc {
	return func(msg events.SQSMessage) (string, error) {
		a, ok := msg.MessageAttributes[name]
		if !ok || a.StringValue == nil || *a.StringValue == "" {
			return "", fmt.Errorf("%w: no message attribute %q", ErrNoKey, name)
		}
		if !hasType(a.DataType, "String") && !hasType(a.DataType, "Number") {
			return "", fmt.Errorf("%w: message attribute %q is of type %q, not String or Number", ErrNoKey, name, a.DataType)
		}
		return *a.StringValue, nil
	}
}

func hasType(dataType, base string) bool {
	return dataType == base || strings.HasPrefix(dataType, base+".")
}

// JSONField keys records by the top-level field name of their JSON body; the
// field must be a non-empty string or a number (used as written, so 42 and
// 42.0 are different keys). A body that is not a JSON object is an error
// that does not wrap ErrNoKey.
func JSONField(name string) KeyFunc {
	return func(msg events.SQSMessage) (string, error) {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal([]byte(msg.Body), &fields); err != nil {
			return "", fmt.Errorf("sqsbatch: body is not a JSON object: %w", err)
		}
		raw, ok := fields[name]
		if !ok || string(raw) == "null" {
			return "", fmt.Errorf("%w: no field %q in the body", ErrNoKey, name)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return "", fmt.Errorf("sqsbatch: field %q: %w", name, err)
		}
		switch v := v.(type) {
		case string:
			if v == "" {
				return "", fmt.Errorf("%w: field %q is empty", ErrNoKey, name)
			}
			return v, nil
		case json.Number:
			return v.String(), nil
		default:
			return "", fmt.Errorf("%w: field %q is a %T, not a string or a number", ErrNoKey, name, v)
		}
	}
}

// FirstOf returns the key of the first fn that yields one. When none does,
// the error joins all their errors.
func FirstOf(fns ...KeyFunc) KeyFunc {
	return func(msg events.SQSMessage) (string, error) {
		errs := make([]error, 0, len(fns)+1)
		for _, fn := range fns {
			key, err := fn(msg)
			if err == nil && key != "" {
				return key, nil
			}
			if err == nil {
				err = fmt.Errorf("%w: empty key", ErrNoKey)
			}
			errs = append(errs, err)
		}
		if len(errs) == 0 {
			errs = append(errs, fmt.Errorf("%w: no key function", ErrNoKey))
		}
		return "", errors.Join(errs...)
	}
}
