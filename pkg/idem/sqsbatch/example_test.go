package sqsbatch_test

import (
	"context"
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
