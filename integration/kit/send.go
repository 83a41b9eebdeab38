package kit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// labelled is a message of the run and its label, unique to its content:
// copies of it carry the same label.
type labelled struct {
	label string
	msg   Message
}

// batchSize is the most entries SendMessageBatch takes.
const batchSize = 10

// batches returns the SendMessageBatch entries that send each message
// copies times, its copies side by side in one batch, every entry
// carrying AttributeRun (run/label) besides the message's own attributes.
func batches(run string, msgs []labelled, copies int) ([][]sqstypes.SendMessageBatchRequestEntry, error) {
	if copies < 1 || copies > batchSize {
		return nil, fmt.Errorf("kit: %d copies do not fit a batch of %d", copies, batchSize)
	}
	perBatch := batchSize / copies
	var out [][]sqstypes.SendMessageBatchRequestEntry
	for first := 0; first < len(msgs); first += perBatch {
		var batch []sqstypes.SendMessageBatchRequestEntry
		for i, m := range msgs[first:min(first+perBatch, len(msgs))] {
			if _, ok := m.msg.Attributes[AttributeRun]; ok {
				return nil, fmt.Errorf("kit: message %s sets %s, the kit's own attribute", m.label, AttributeRun)
			}
			attrs := map[string]sqstypes.MessageAttributeValue{
				AttributeRun: {DataType: aws.String("String"), StringValue: aws.String(run + "/" + m.label)},
			}
			for _, name := range slices.Sorted(maps.Keys(m.msg.Attributes)) {
				attrs[name] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(m.msg.Attributes[name])}
			}
			for j := range copies {
				batch = append(batch, sqstypes.SendMessageBatchRequestEntry{
					Id: aws.String(fmt.Sprintf("m%dc%d", i, j)), MessageBody: aws.String(m.msg.Body), MessageAttributes: attrs,
				})
			}
		}
		out = append(out, batch)
	}
	return out, nil
}

// runLabel reads AttributeRun: the run's id and the message's label.
func runLabel(attrs map[string]sqstypes.MessageAttributeValue) (run, label string, ok bool) {
	v, found := attrs[AttributeRun]
	if !found {
		return "", "", false
	}
	return strings.Cut(aws.ToString(v.StringValue), "/")
}

// sendAtOnce sends the batches in order from each of senders goroutines
// released at the same moment: copies of a key arriving together.
func sendAtOnce(ctx context.Context, c SQSAPI, url string, senders int, bs [][]sqstypes.SendMessageBatchRequestEntry) error {
	release := make(chan struct{})
	errs := make(chan error, senders*len(bs))
	var wg sync.WaitGroup
	for range senders {
		wg.Go(func() {
			<-release
			for _, b := range bs {
				out, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: b})
				if err == nil && len(out.Failed) > 0 {
					err = fmt.Errorf("%d entries failed: %s", len(out.Failed), aws.ToString(out.Failed[0].Message))
				}
				if err != nil {
					errs <- fmt.Errorf("kit: SendMessageBatch: %w", err)
				}
			}
		})
	}
	close(release)
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}
