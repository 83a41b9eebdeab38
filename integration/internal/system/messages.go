package system

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Message is one unit of work of a scenario: a key and the body the
// effect's probe made for it.
type Message struct {
	Key  string
	Body []byte
}

// Keys returns n keys prefix-0000 … .
func Keys(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%04d", prefix, i)
	}
	return out
}

// Messages seeds what the effect needs for keys (Probe.Seed) and returns a
// message for each (Probe.Message, variant 0).
func (s *System) Messages(ctx context.Context, keys ...string) ([]Message, error) {
	if err := s.Probe.Seed(ctx, keys); err != nil {
		return nil, fmt.Errorf("system: seed: %w", err)
	}
	out := make([]Message, len(keys))
	for i, k := range keys {
		m, err := s.Message(k, 0)
		if err != nil {
			return nil, err
		}
		out[i] = m
	}
	return out, nil
}

// Message is the probe's message variant for key; seed it first.
func (s *System) Message(key string, variant int) (Message, error) {
	body, err := s.Probe.Message(key, variant)
	if err != nil {
		return Message{}, fmt.Errorf("system: probe message for %q: %w", key, err)
	}
	return Message{Key: key, Body: body}, nil
}

// KeysOf returns the keys of msgs.
func KeysOf(msgs []Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Key
	}
	return out
}

// ProducerResult is the producer's answer.
type ProducerResult struct {
	Sent       int `json:"sent"`
	Duplicates int `json:"duplicates"`
	InProgress int `json:"inProgress"`
	Failed     int `json:"failed"`
	Failures   []struct {
		Key    string `json:"key"`
		Reason string `json:"reason"`
	} `json:"failures"`
}

// ProducerInput is the producer's input for msgs.
func ProducerInput(msgs []Message) ([]byte, error) {
	raw := make([]json.RawMessage, len(msgs))
	for i, m := range msgs {
		raw[i] = m.Body
	}
	return json.Marshal(map[string]any{"messages": raw})
}

// Produce invokes the producer Lambda with msgs.
func (s *System) Produce(ctx context.Context, msgs []Message) (ProducerResult, error) {
	payload, err := ProducerInput(msgs)
	if err != nil {
		return ProducerResult{}, err
	}
	out, err := s.Producer.Invoke(ctx, payload)
	if err != nil {
		return ProducerResult{}, fmt.Errorf("system: invoke producer: %w", err)
	}
	var res ProducerResult
	if err := json.Unmarshal(out, &res); err != nil {
		return res, fmt.Errorf("system: producer answered %q: %w", out, err)
	}
	return res, nil
}

// keyAttribute is the message attribute carrying key, as the producer
// sends it.
func (s *System) keyAttribute(key string) map[string]types.MessageAttributeValue {
	return map[string]types.MessageAttributeValue{s.Key: {DataType: aws.String("String"), StringValue: aws.String(key)}}
}

// SendRaw sends msgs straight to the queue, as a second upstream that
// knows nothing of the producer's guard would: raw duplicates.
func (s *System) SendRaw(ctx context.Context, msgs ...Message) error {
	for len(msgs) > 0 {
		n := min(10, len(msgs))
		var entries []types.SendMessageBatchRequestEntry
		for i, m := range msgs[:n] {
			entries = append(entries, types.SendMessageBatchRequestEntry{
				Id:                aws.String(strconv.Itoa(i)),
				MessageBody:       aws.String(string(m.Body)),
				MessageAttributes: s.keyAttribute(m.Key),
			})
		}
		out, err := s.SQS.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(s.Queue.URL), Entries: entries})
		if err != nil {
			return fmt.Errorf("system: send: %w", err)
		}
		if len(out.Failed) > 0 {
			return fmt.Errorf("system: send: %d entries failed: %s", len(out.Failed), aws.ToString(out.Failed[0].Message))
		}
		msgs = msgs[n:]
	}
	return nil
}

// SendBody sends one message with a literal body and, unless key is "", the
// key attribute; it returns the message id.
func (s *System) SendBody(ctx context.Context, body, key string) (string, error) {
	in := &sqs.SendMessageInput{QueueUrl: aws.String(s.Queue.URL), MessageBody: aws.String(body)}
	if key != "" {
		in.MessageAttributes = s.keyAttribute(key)
	}
	out, err := s.SQS.SendMessage(ctx, in)
	if err != nil {
		return "", fmt.Errorf("system: send: %w", err)
	}
	return aws.ToString(out.MessageId), nil
}

// Malformed is a body no consumer can read a key from, sent without the
// key attribute: it can only end in the DLQ, whatever the effect.
const Malformed = `{"not": "json`

// Keyless is a JSON body without the key field, sent without the key
// attribute: rejected too, whatever the effect.
const Keyless = `{"note": "no key here"}`

// Event builds the SQS event Lambda would deliver for one message, for
// tests that invoke consumers directly (the same message to several
// instances).
func (s *System) Event(messageID string, m Message) ([]byte, error) {
	value := m.Key
	ev := events.SQSEvent{Records: []events.SQSMessage{{
		MessageId:     messageID,
		ReceiptHandle: "rh-" + messageID,
		Body:          string(m.Body),
		Attributes:    map[string]string{"ApproximateReceiveCount": "1"},
		MessageAttributes: map[string]events.SQSMessageAttribute{
			s.Key: {DataType: "String", StringValue: &value},
		},
		EventSource:    "aws:sqs",
		EventSourceARN: s.Queue.ARN,
		AWSRegion:      s.Stack.Region,
	}}}
	return json.Marshal(ev)
}

// InvokeConsumer invokes one consumer instance with a payload and returns
// the message ids it reported as failed.
func (s *System) InvokeConsumer(ctx context.Context, payload []byte) ([]string, error) {
	out, err := s.Consumer.Invoke(ctx, payload)
	if err != nil {
		return nil, err
	}
	var resp events.SQSEventResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		return nil, fmt.Errorf("system: consumer answered %q: %w", out, err)
	}
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	return failed, nil
}
