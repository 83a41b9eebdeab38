package effect

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// Probe is the effect's side of the proof: bookings for keys, rooms to
// book, and how often each booking took place.
type Probe struct {
	db              *dynamodb.Client
	rooms, bookings string
}

// NewProbe returns the probe of the effect whose environment env gives,
// reading with db.
func NewProbe(db *dynamodb.Client, env func(string) string) *Probe {
	return &Probe{db: db, rooms: env(contract.EnvRoomsTable), bookings: env(contract.EnvBookingsTable)}
}

// roomOf spreads bookings over 20 rooms.
func roomOf(key string) string {
	h := fnv.New32a()
	h.Write([]byte(key))
	return fmt.Sprintf("room-%02d", h.Sum32()%20)
}

// Message is a booking for key; variant 0 always the same one.
func (p *Probe) Message(key string, variant int) ([]byte, error) {
	return json.Marshal(map[string]any{contract.KeyField: key, "roomId": roomOf(key), "nights": 1 + variant})
}

// Seed makes room for keys: one more night in each booking's room per key.
func (p *Probe) Seed(ctx context.Context, keys []string) error {
	nights := map[string]int{}
	for _, k := range keys {
		nights[roomOf(k)]++
	}
	for room, n := range nights {
		expr, err := expression.NewBuilder().WithUpdate(expression.Add(expression.Name("available"), expression.Value(n))).Build()
		if err != nil {
			return err
		}
		key, err := attributevalue.MarshalMap(map[string]string{"roomId": room})
		if err != nil {
			return err
		}
		if _, err := p.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(p.rooms), Key: key, UpdateExpression: expr.Update(),
			ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		}); err != nil {
			return fmt.Errorf("probe: seed %s: %w", room, err)
		}
	}
	return nil
}

// Applied returns how many times each of keys was booked.
func (p *Probe) Applied(ctx context.Context, keys []string) (map[string]int, error) {
	want := make(map[string]bool, len(keys))
	for _, k := range keys {
		want[k] = true
	}
	out := map[string]int{}
	pages := dynamodb.NewScanPaginator(p.db, &dynamodb.ScanInput{TableName: aws.String(p.bookings), ConsistentRead: aws.Bool(true)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("probe: scan %s: %w", p.bookings, err)
		}
		for _, item := range page.Items {
			var key string
			var row struct {
				Booked int `dynamodbav:"booked"`
			}
			if err := attributevalue.Unmarshal(item[contract.KeyField], &key); err != nil {
				return nil, err
			}
			if err := attributevalue.UnmarshalMap(item, &row); err != nil {
				return nil, err
			}
			if want[key] && row.Booked > 0 {
				out[key] = row.Booked
			}
		}
	}
	return out, nil
}

// Modes: bookings are DynamoDB writes only, committed with the receipt.
func (p *Probe) Modes() []string { return []string{consumer.ModeTransactional} }
