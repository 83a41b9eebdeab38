package effect

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// Probe is the effect's side of the proof: the integration suite, the
// deployed-stack test, the chaos run and the demo ask it for messages and
// for how often each key's effect took place, and never read the ledger
// themselves. A fork writes its own next to its effect.
type Probe struct {
	db     *dynamodb.Client
	ledger string
}

// NewProbe returns the probe of the effect whose environment env gives
// (the consumer's, as the stack resolves it: the ledger's name), reading
// with db.
func NewProbe(db *dynamodb.Client, env func(string) string) *Probe {
	return &Probe{db: db, ledger: env(contract.EnvLedgerTable)}
}

// Message is a valid body for key; variant 0 always the same one, any
// other variant the same key with other content.
func (p *Probe) Message(key string, variant int) ([]byte, error) {
	return json.Marshal(map[string]any{contract.KeyField: key, "customer": "c-1", "amountCents": 2500 + variant})
}

// Seed writes the data the effect needs for keys: a gift card needs none.
func (p *Probe) Seed(context.Context, []string) error { return nil }

// Applied returns how many times each of keys had its effect: the ledger's
// issued counter. Keys never applied are absent.
func (p *Probe) Applied(ctx context.Context, keys []string) (map[string]int, error) {
	want := make(map[string]bool, len(keys))
	for _, k := range keys {
		want[k] = true
	}
	out := map[string]int{}
	pages := dynamodb.NewScanPaginator(p.db, &dynamodb.ScanInput{
		TableName: aws.String(p.ledger), ConsistentRead: aws.Bool(true),
		ProjectionExpression:     aws.String("#k, issued"),
		ExpressionAttributeNames: map[string]string{"#k": contract.KeyField},
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("probe: scan %s: %w", p.ledger, err)
		}
		for _, item := range page.Items {
			var key string
			var row struct {
				Issued int `dynamodbav:"issued"`
			}
			if err := attributevalue.Unmarshal(item[contract.KeyField], &key); err != nil {
				return nil, err
			}
			if err := attributevalue.UnmarshalMap(item, &row); err != nil {
				return nil, err
			}
			if want[key] && row.Issued > 0 {
				out[key] = row.Issued
			}
		}
	}
	return out, nil
}

// Modes are the modes the effect implements.
func (p *Probe) Modes() []string { return consumer.Modes() }
