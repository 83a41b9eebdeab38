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

// Order is the message the example consumer takes.
type Order struct {
	OrderID     string `json:"orderId"`
	Customer    string `json:"customer"`
	AmountCents int64  `json:"amountCents"`
	Poison      bool   `json:"poison,omitempty"`
}

// Orders returns n orders with ids prefix-0000 … .
func Orders(prefix string, n int) []Order {
	out := make([]Order, n)
	for i := range out {
		out[i] = Order{OrderID: fmt.Sprintf("%s-%04d", prefix, i), Customer: "c-" + strconv.Itoa(i%97), AmountCents: int64(1000 + i)}
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
		OrderID string `json:"orderId"`
		Reason  string `json:"reason"`
	} `json:"failures"`
}

// Produce invokes the producer Lambda with orders.
func (s *System) Produce(ctx context.Context, orders []Order) (ProducerResult, error) {
	payload, err := json.Marshal(map[string]any{"orders": orders})
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

// SendRaw sends orders straight to the queue, as a second upstream that
// knows nothing of the producer's guard would: raw duplicates.
func (s *System) SendRaw(ctx context.Context, orders ...Order) error {
	for len(orders) > 0 {
		n := min(10, len(orders))
		var entries []types.SendMessageBatchRequestEntry
		for i, o := range orders[:n] {
			body, _ := json.Marshal(o)
			entries = append(entries, types.SendMessageBatchRequestEntry{
				Id:          aws.String(strconv.Itoa(i)),
				MessageBody: aws.String(string(body)),
				MessageAttributes: map[string]types.MessageAttributeValue{
					"orderId": {DataType: aws.String("String"), StringValue: aws.String(o.OrderID)},
				},
			})
		}
		out, err := s.SQS.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(s.Queue.URL), Entries: entries})
		if err != nil {
			return fmt.Errorf("system: send: %w", err)
		}
		if len(out.Failed) > 0 {
			return fmt.Errorf("system: send: %d entries failed: %s", len(out.Failed), aws.ToString(out.Failed[0].Message))
		}
		orders = orders[n:]
	}
	return nil
}

// SendBody sends one message with a literal body and optional orderId
// attribute (malformed and key-less messages).
func (s *System) SendBody(ctx context.Context, body, orderID string) (string, error) {
	in := &sqs.SendMessageInput{QueueUrl: aws.String(s.Queue.URL), MessageBody: aws.String(body)}
	if orderID != "" {
		in.MessageAttributes = map[string]types.MessageAttributeValue{
			"orderId": {DataType: aws.String("String"), StringValue: aws.String(orderID)},
		}
	}
	out, err := s.SQS.SendMessage(ctx, in)
	if err != nil {
		return "", fmt.Errorf("system: send: %w", err)
	}
	return aws.ToString(out.MessageId), nil
}

// Event builds the SQS event Lambda would deliver for one order, for tests
// that invoke consumers directly (the same message to several instances).
func (s *System) Event(messageID string, o Order) ([]byte, error) {
	body, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	ev := events.SQSEvent{Records: []events.SQSMessage{{
		MessageId:     messageID,
		ReceiptHandle: "rh-" + messageID,
		Body:          string(body),
		Attributes:    map[string]string{"ApproximateReceiveCount": "1"},
		MessageAttributes: map[string]events.SQSMessageAttribute{
			"orderId": {DataType: "String", StringValue: aws.String(o.OrderID)},
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
