package sqsbatch_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

func Example() {
	// In a Lambda function: dynamostore.New(client, table) and lambda.Start(h.Handle).
	guard, err := idem.New(idemtest.NewMemoryStore(), "welcome-mail")
	if err != nil {
		panic(err)
	}
	sent := 0
	sendMail := func(ctx context.Context, key string, msg events.SQSMessage) ([]byte, error) {
		sent++ // the side effect: it must happen once per user
		return []byte("mail-for-" + key), nil
	}
	h, err := sqsbatch.New(guard, sqsbatch.JSONField("userId"), sendMail, sqsbatch.WithConcurrency(1))
	if err != nil {
		panic(err)
	}

	batch := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", Body: `{"userId": "u-1"}`},
		{MessageId: "m2", Body: `{"userId": "u-2"}`},
		{MessageId: "m3", Body: `{"no": "key"}`},
	}}
	for delivery := 1; delivery <= 2; delivery++ { // SQS delivers the batch again
		resp, _ := h.Handle(context.Background(), batch)
		fmt.Printf("delivery %d: mails sent %d, failed records %v\n", delivery, sent, resp.BatchItemFailures)
	}
	// Output:
	// delivery 1: mails sent 2, failed records [{m3}]
	// delivery 2: mails sent 2, failed records [{m3}]
}

// The key is the identity of the business effect, not of the message: a
// producer that sends "order 42" twice sends two messages with two ids but
// one orderId. FirstOf tries key functions in turn: here the orderId message
// attribute, else the body's orderId field.
func ExampleFirstOf() {
	key := sqsbatch.FirstOf(sqsbatch.Attribute("orderId"), sqsbatch.JSONField("orderId"))
	id := "o-42"
	for _, msg := range []events.SQSMessage{
		{MessageId: "m1", MessageAttributes: map[string]events.SQSMessageAttribute{"orderId": {DataType: "String", StringValue: &id}}},
		{MessageId: "m2", Body: `{"orderId": "o-42", "amountCents": 2500}`},
		{MessageId: "m3", Body: `{"amountCents": 2500}`},
	} {
		k, err := key(msg)
		fmt.Printf("%s: key %q, no key: %v\n", msg.MessageId, k, errors.Is(err, sqsbatch.ErrNoKey))
	}
	// Output:
	// m1: key "o-42", no key: false
	// m2: key "o-42", no key: false
	// m3: key "", no key: true
}
