//go:build e2e

// The hotel stack as cdklocal deployed it into the LocalStack of
// AWS_ENDPOINT_URL (integration/scripts/e2e-example.sh in the sqsidem
// repository): TestBookings drives it through LocalStack's own event source
// mapping; TestNothingLeft runs after `cdklocal destroy`.
//
// HOTEL_STACK names the stack (default HotelLocal); HOTEL_E2E_RECORD is
// where TestBookings leaves the stack's resources for TestNothingLeft.
package hotel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"

	"example.com/hotel"
)

// The run: keys bookings, each copies times in every SendMessageBatch of
// each of senders goroutines released at the same moment. LocalStack's
// mapping takes about a second per batch of 10 whatever it holds: the run
// is kept small.
const (
	keys    = 10
	copies  = 2
	senders = 3
	sent    = keys * copies * senders
)

// TestBookings: every booking confirmed exactly once (its confirmations
// counter is 1), nothing in the DLQ, and the consumer's EMF lines in its
// CloudWatch logs count every message and carry every metric the deployed
// dashboard and alarms read.
func TestBookings(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	c := newClients(ctx, t)
	s := c.stack(ctx, t)
	if err := s.remember(); err != nil {
		t.Fatal(err)
	}

	prefix := "b-" + strconv.FormatInt(time.Now().UnixMilli(), 36)
	bookings := make([]hotel.Booking, keys)
	for i := range bookings {
		bookings[i] = hotel.Booking{ID: fmt.Sprintf("%s-%02d", prefix, i), Room: strconv.Itoa(101 + i%7),
			Guest: "guest " + strconv.Itoa(i), CheckIn: "2026-12-24", Nights: 1 + i%4}
	}
	start := time.Now()
	c.sendAtOnce(ctx, t, s.queueURL, bookings)
	confirmations := c.waitConfirmed(ctx, t, s, prefix)
	t.Logf("%d messages (%d bookings) sent and confirmed in %s", sent, keys, time.Since(start).Round(100*time.Millisecond))

	for _, b := range bookings {
		if n := confirmations[b.ID]; n != 1 {
			t.Errorf("booking %s confirmed %d times, want 1", b.ID, n)
		}
	}
	if visible, inFlight := c.depth(ctx, t, s.dlqURL); visible+inFlight != 0 {
		t.Errorf("the DLQ holds %d messages, want 0", visible+inFlight)
	}

	totals := c.waitMetrics(ctx, t, s)
	t.Logf("outcomes in the consumer's EMF lines: %v", totals)
	if totals[consumer.MetricExecuted] != keys || totals[consumer.MetricExecuted]+totals[consumer.MetricDuplicate] < sent {
		t.Errorf("%s %d, %s %d: want %d executed and every other copy a duplicate (%d messages)", consumer.MetricExecuted,
			totals[consumer.MetricExecuted], consumer.MetricDuplicate, totals[consumer.MetricDuplicate], keys, sent)
	}
	for _, m := range []string{consumer.MetricFailed, consumer.MetricStoreError, consumer.MetricLeaseLost,
		consumer.MetricUnconfirmed, consumer.MetricMismatch, consumer.MetricRejected} {
		if totals[m] != 0 {
			t.Errorf("%s = %d, want 0", m, totals[m])
		}
	}
	read := c.readers(ctx, t, s)
	for _, m := range slices.Sorted(maps.Keys(read)) {
		if _, ok := totals[m]; !ok {
			t.Errorf("%s reads %s, which no EMF line carries", strings.Join(read[m], ", "), m)
		}
	}
	t.Logf("EMF metrics the deployed dashboard and alarms read: %v", read)
}

// TestNothingLeft runs after `cdklocal destroy`: the stack and every queue,
// table, function, event source mapping and log group TestBookings saw are
// gone.
func TestNothingLeft(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	r, err := recall()
	if err != nil {
		t.Fatalf("no record of the deployed stack (TestBookings runs first): %v", err)
	}
	c := newClients(ctx, t)
	out, err := c.cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(r.StackName)})
	if err == nil {
		for _, st := range out.Stacks {
			if st.StackStatus != "DELETE_COMPLETE" {
				t.Errorf("stack %s is %s", r.StackName, st.StackStatus)
			}
		}
	} else if !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("stack %s: %v", r.StackName, err)
	}
	var left []string
	for _, phys := range slices.Sorted(maps.Keys(r.Resources)) {
		typ := r.Resources[phys]
		gone, err := c.gone(ctx, typ, phys)
		switch {
		case err != nil:
			t.Errorf("%s %s: %v", typ, phys, err)
		case !gone:
			left = append(left, typ+" "+phys)
		}
	}
	t.Logf("after destroy: %d of the stack's %d resources left", len(left), len(r.Resources))
	if len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// sendAtOnce sends every booking copies times in each SendMessageBatch,
// from senders goroutines released together: duplicates in one batch and
// copies of the same key arriving at the same moment.
func (c clients) sendAtOnce(ctx context.Context, t *testing.T, queueURL string, bookings []hotel.Booking) {
	t.Helper()
	const perBatch = 10 / copies // SendMessageBatch takes 10 entries
	var batches [][]sqstypes.SendMessageBatchRequestEntry
	for first := 0; first < len(bookings); first += perBatch {
		var batch []sqstypes.SendMessageBatchRequestEntry
		for i, b := range bookings[first:min(first+perBatch, len(bookings))] {
			body, err := json.Marshal(b)
			if err != nil {
				t.Fatal(err)
			}
			for j := range copies {
				batch = append(batch, sqstypes.SendMessageBatchRequestEntry{
					Id: aws.String(fmt.Sprintf("b%dc%d", i, j)), MessageBody: aws.String(string(body)),
				})
			}
		}
		batches = append(batches, batch)
	}
	release := make(chan struct{})
	errs := make(chan error, senders*len(batches))
	var wg sync.WaitGroup
	for range senders {
		wg.Go(func() {
			<-release
			for _, batch := range batches {
				out, err := c.sqs.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: batch})
				if err == nil && len(out.Failed) > 0 {
					err = fmt.Errorf("%d entries failed: %s", len(out.Failed), aws.ToString(out.Failed[0].Message))
				}
				if err != nil {
					errs <- fmt.Errorf("SendMessageBatch: %w", err)
				}
			}
		})
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// waitConfirmed waits until every booking of the run (ids starting with
// prefix) has its reservation and the queue has been empty for two polls in
// a row, and returns the confirmations counter of each booking.
func (c clients) waitConfirmed(ctx context.Context, t *testing.T, s stack, prefix string) map[string]int {
	t.Helper()
	for quiet := 0; ; {
		confirmations := c.confirmations(ctx, t, s.reservations, prefix)
		visible, inFlight := c.depth(ctx, t, s.queueURL)
		if len(confirmations) == keys && visible+inFlight == 0 {
			quiet++
		} else {
			quiet = 0
		}
		if quiet == 2 {
			return confirmations
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %d bookings confirmed and an empty queue: %d confirmed, %d visible and %d in flight: %v",
				keys, len(confirmations), visible, inFlight, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// confirmations reads the reservations of this run's bookings (the ids
// starting with prefix): their confirmations counter, by booking id.
func (c clients) confirmations(ctx context.Context, t *testing.T, table, prefix string) map[string]int {
	t.Helper()
	got := map[string]int{}
	p := dynamodb.NewScanPaginator(c.ddb, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("scan %s: %v", table, err)
		}
		var items []struct {
			ID            string `dynamodbav:"bookingId"`
			Confirmations int    `dynamodbav:"confirmations"`
		}
		if err := attributevalue.UnmarshalListOfMaps(page.Items, &items); err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			if strings.HasPrefix(it.ID, prefix+"-") {
				got[it.ID] = it.Confirmations
			}
		}
	}
	return got
}

func (c clients) depth(ctx context.Context, t *testing.T, url string) (visible, inFlight int) {
	t.Helper()
	out, err := c.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{
		sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
	}})
	if err != nil {
		t.Fatalf("queue %s: %v", url, err)
	}
	visible, _ = strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
	inFlight, _ = strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
	return visible, inFlight
}
