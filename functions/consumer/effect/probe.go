package effect

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// Probe is the effect's side of the proof: the integration suite, the
// deployed-stack test, the chaos run and the demo ask it for messages and
// for how often each key's effect took place, and never read the partner
// or the ledger themselves. A fork writes its own next to its effect.
type Probe struct {
	db      *dynamodb.Client
	ledger  string
	partner string // lease mode: the partner's URL
	client  *http.Client
}

// NewProbe returns the probe of the effect whose environment env gives
// (the consumer's, as the stack resolves it: its mode, the partner's URL,
// the ledger's name). In lease mode it asks the partner (the suite's
// stand-in, which counts every call that issued a card); in transactional
// mode it reads the ledger with db.
func NewProbe(db *dynamodb.Client, env func(string) string) *Probe {
	p := &Probe{db: db, ledger: env(contract.EnvLedgerTable), client: &http.Client{Timeout: 30 * time.Second}}
	if cmp.Or(env(consumer.EnvMode), consumer.DefaultMode) == consumer.ModeLease {
		p.partner = env(contract.EnvEffectURL)
	}
	return p
}

// Message is a valid body for key; variant 0 always the same one, any
// other variant the same key with other content.
func (p *Probe) Message(key string, variant int) ([]byte, error) {
	return json.Marshal(map[string]any{contract.KeyField: key, "customer": "c-1", "amountCents": 2500 + variant})
}

// Seed writes the data the effect needs for keys: a gift card needs none.
func (p *Probe) Seed(context.Context, []string) error { return nil }

// Applied returns how many times each of keys had its effect: how many
// calls issued its card, as the partner counts them (lease mode), or the
// ledger's issued counter (transactional). Keys never applied are absent.
func (p *Probe) Applied(ctx context.Context, keys []string) (map[string]int, error) {
	want := make(map[string]bool, len(keys))
	for _, k := range keys {
		want[k] = true
	}
	if p.partner != "" {
		return p.fromPartner(ctx, want)
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

// fromPartner reads the partner's count of every key (GET <url>: a JSON
// object, key to the number of calls that issued its card) and keeps
// those of want.
func (p *Probe) fromPartner(ctx context.Context, want map[string]bool) (map[string]int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.partner, nil)
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("probe: ask the partner: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("probe: the partner at %s answered %s", p.partner, resp.Status)
	}
	var all map[string]int
	if err := json.NewDecoder(resp.Body).Decode(&all); err != nil {
		return nil, fmt.Errorf("probe: the partner's counts: %w", err)
	}
	out := map[string]int{}
	for k, n := range all {
		if want[k] && n > 0 {
			out[k] = n
		}
	}
	return out, nil
}
