package effect

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// Probe is the effect's side of the proof: events for keys, and how often
// the endpoint received each. The effect writes no table: the proof asks
// the endpoint, which in the suite is its stand-in (it counts every
// delivery that got through, repeats included, so a second one shows).
type Probe struct {
	hook   string // the endpoint, WEBHOOK_URL
	client *http.Client
}

// NewProbe returns the probe of the effect whose environment env gives
// (the consumer's, as the stack resolves it). It reads no table: db is
// not used.
func NewProbe(_ *dynamodb.Client, env func(string) string) *Probe {
	return &Probe{hook: env(contract.EnvWebhookURL), client: &http.Client{Timeout: 30 * time.Second}}
}

// Message is an event for key; variant 0 always the same one, any other
// variant the same key with other data.
func (p *Probe) Message(key string, variant int) ([]byte, error) {
	return json.Marshal(map[string]any{
		contract.KeyField: key, "type": "order.paid", "data": map[string]any{"order": "ord-" + key, "amountCents": 990 + variant},
	})
}

// Seed writes the data the effect needs for keys: an event needs none.
func (p *Probe) Seed(context.Context, []string) error { return nil }

// Applied returns how many times the endpoint received each of keys: GET
// <url> (the stand-in's count per key), those of keys. Keys never received
// are absent.
func (p *Probe) Applied(ctx context.Context, keys []string) (map[string]int, error) {
	if p.hook == "" {
		return nil, fmt.Errorf("probe: no endpoint to ask (%s is not set)", contract.EnvWebhookURL)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.hook, nil)
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("probe: ask the endpoint: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("probe: the endpoint at %s answered %s", p.hook, resp.Status)
	}
	var all map[string]int
	if err := json.NewDecoder(resp.Body).Decode(&all); err != nil {
		return nil, fmt.Errorf("probe: the endpoint's counts: %w", err)
	}
	out := map[string]int{}
	for _, k := range keys {
		if n := all[k]; n > 0 {
			out[k] = n
		}
	}
	return out, nil
}

// Modes: a call to a customer cannot join the receipt's transaction, so
// lease mode only.
func (p *Probe) Modes() []string { return []string{consumer.ModeLease} }
