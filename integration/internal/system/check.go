package system

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// WaitIdle waits until the queue holds no message, visible or in flight,
// for two checks in a row: everything was deleted or moved to the DLQ.
func (s *System) WaitIdle(ctx context.Context, progress func(visible, inFlight int)) error {
	quiet := 0
	for {
		visible, inFlight, err := s.depth(ctx, s.Queue.URL)
		if err != nil {
			return err
		}
		if progress != nil {
			progress(visible, inFlight)
		}
		if visible+inFlight == 0 {
			quiet++
		} else {
			quiet = 0
		}
		if quiet == 2 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("system: queue not drained (%d visible, %d in flight): %w", visible, inFlight, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (s *System) depth(ctx context.Context, url string) (visible, inFlight int, err error) {
	return QueueDepth(ctx, s.SQS, url)
}

// QueueDepth returns the approximate numbers of visible and in-flight
// messages of the queue at url.
func QueueDepth(ctx context.Context, c *sqs.Client, url string) (visible, inFlight int, err error) {
	out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	if err != nil {
		return 0, 0, fmt.Errorf("system: queue attributes: %w", err)
	}
	visible, _ = strconv.Atoi(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)])
	inFlight, _ = strconv.Atoi(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
	return visible, inFlight, nil
}

// LedgerRow is one order's line in the effect's ledger.
type LedgerRow struct {
	Issued    int       // gift cards issued: above 1 is a double effect
	UpdatedAt time.Time // when the last one was issued
}

// LedgerRows returns the effect's ledger by order id.
func (s *System) LedgerRows(ctx context.Context) (map[string]LedgerRow, error) {
	out := map[string]LedgerRow{}
	p := dynamodb.NewScanPaginator(s.DDB, &dynamodb.ScanInput{
		TableName: aws.String(s.Ledger), ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String("orderId, issued, updatedAt"),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("system: scan ledger: %w", err)
		}
		for _, item := range page.Items {
			var row struct {
				OrderID   string `dynamodbav:"orderId"`
				Issued    int    `dynamodbav:"issued"`
				UpdatedAt int64  `dynamodbav:"updatedAt"`
			}
			if err := attributevalue.UnmarshalMap(item, &row); err != nil {
				return nil, err
			}
			out[row.OrderID] = LedgerRow{Issued: row.Issued, UpdatedAt: time.UnixMilli(row.UpdatedAt)}
		}
	}
	return out, nil
}

// Issued returns how many gift cards each order got. Any value above 1 is
// a double effect.
func (s *System) Issued(ctx context.Context) (map[string]int, error) {
	rows, err := s.LedgerRows(ctx)
	if err != nil {
		return nil, err
	}
	issued := make(map[string]int, len(rows))
	for id, r := range rows {
		issued[id] = r.Issued
	}
	return issued, nil
}

// DeadLetter is a message in the DLQ with the reason the consumer logged.
type DeadLetter struct {
	MessageID string
	OrderID   string
	Body      string
	Receives  int
	Reason    string
}

// DeadLetters reads the DLQ. The messages stay there, hidden for a minute.
func (s *System) DeadLetters(ctx context.Context) ([]DeadLetter, error) {
	var out []DeadLetter
	for empty := 0; empty < 2; {
		res, err := s.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(s.DLQ.URL),
			MaxNumberOfMessages:         10,
			VisibilityTimeout:           60,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if err != nil {
			return nil, fmt.Errorf("system: read DLQ: %w", err)
		}
		if len(res.Messages) == 0 {
			empty++
			continue
		}
		for _, m := range res.Messages {
			d := DeadLetter{MessageID: aws.ToString(m.MessageId), Body: aws.ToString(m.Body)}
			d.Receives, _ = strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
			if a, ok := m.MessageAttributes["orderId"]; ok {
				d.OrderID = aws.ToString(a.StringValue)
			} else {
				var o Order
				if json.Unmarshal([]byte(d.Body), &o) == nil {
					d.OrderID = o.OrderID
				}
			}
			d.Reason = s.Records.Reason(d.MessageID)
			out = append(out, d)
		}
	}
	return out, nil
}

// Report is the invariant check of a run: every order sent is applied
// exactly once in the ledger or sits in the DLQ with a reason.
type Report struct {
	Orders        int            // distinct orders sent
	Applied       int            // orders with at least one gift card
	DoubleEffects int            // gift cards issued beyond the first
	Doubled       []string       // orders issued more than once
	Missing       []string       // neither applied nor in the DLQ: lost
	DeadLetters   []DeadLetter   // with reasons
	Outcomes      map[string]int // per-record outcomes the consumers logged
	Deliveries    int            // records the consumers processed
	// DynamoRequests counts the consumers' and producer's DynamoDB requests.
	DynamoRequests map[string]int
}

// Check reads the ledger and the DLQ and accounts for every order sent.
func (s *System) Check(ctx context.Context, sent []Order) (Report, error) {
	issued, err := s.Issued(ctx)
	if err != nil {
		return Report{}, err
	}
	dead, err := s.DeadLetters(ctx)
	if err != nil {
		return Report{}, err
	}
	inDLQ := map[string]bool{}
	for _, d := range dead {
		inDLQ[d.OrderID] = true
	}
	r := Report{DeadLetters: dead, Outcomes: s.Records.Outcomes(), DynamoRequests: s.Requests.Counts()}
	seen := map[string]bool{}
	for _, o := range sent {
		if seen[o.OrderID] {
			continue
		}
		seen[o.OrderID] = true
		r.Orders++
		switch n := issued[o.OrderID]; {
		case n >= 1:
			r.Applied++
			if n > 1 {
				r.DoubleEffects += n - 1
				r.Doubled = append(r.Doubled, o.OrderID)
			}
		case !inDLQ[o.OrderID]:
			r.Missing = append(r.Missing, o.OrderID)
		}
	}
	for _, n := range r.Outcomes {
		r.Deliveries += n
	}
	slices.Sort(r.Doubled)
	slices.Sort(r.Missing)
	return r, nil
}

// Lost returns an error naming the orders that vanished or a dead letter
// without a reason, nil when the invariant holds.
func (r Report) Lost() error {
	if len(r.Missing) > 0 {
		return fmt.Errorf("%d orders vanished (neither applied nor in the DLQ): %v", len(r.Missing), r.Missing)
	}
	for _, d := range r.DeadLetters {
		if d.Reason == "" {
			return fmt.Errorf("dead letter %s (order %q) has no logged reason", d.MessageID, d.OrderID)
		}
	}
	return nil
}
