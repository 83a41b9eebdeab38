package chaos

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/exactlyonce/sqsidem/integration/internal/system"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

// sentTimes keeps, per order, the earliest SentTimestamp of its messages.
type sentTimes struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (s *sentTimes) add(msgs []sqstypes.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range msgs {
		a, ok := m.MessageAttributes["orderId"]
		ms, err := strconv.ParseInt(m.Attributes["SentTimestamp"], 10, 64)
		if !ok || err != nil {
			continue
		}
		id, t := aws.ToString(a.StringValue), time.UnixMilli(ms)
		if old, ok := s.at[id]; !ok || t.Before(old) {
			s.at[id] = t
		}
	}
}

// merged fills in, from the publisher's own clock, orders whose messages
// the poller never saw (delivered only directly).
func (s *sentTimes) merged(first map[string]time.Time) map[string]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, t := range first {
		if _, ok := s.at[id]; !ok {
			s.at[id] = t
		}
	}
	return s.at
}

// storageKeys maps the consumer's storage keys back to order ids.
func storageKeys(plan Plan, namespace string) map[string]string {
	if namespace == "" {
		namespace = "consumer"
	}
	g, err := idem.New(idemtest.NewMemoryStore(), namespace)
	if err != nil {
		return nil
	}
	out := make(map[string]string, len(plan.Orders))
	for _, o := range plan.Orders {
		out[g.StorageKey(o.OrderID)] = o.OrderID
	}
	return out
}

// readLedger scans the effect's ledger.
func readLedger(ctx context.Context, s *system.System) (map[string]LedgerRow, error) {
	out := map[string]LedgerRow{}
	p := dynamodb.NewScanPaginator(s.DDB, &dynamodb.ScanInput{
		TableName: aws.String(s.Ledger), ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String("orderId, issued, updatedAt"),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("chaos: scan ledger: %w", err)
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
