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

// Probe is the effect's side of the proof: payments for keys, and how
// often the partner was notified of each. The effect writes no table: the
// proof asks the partner (the suite's stand-in, which counts every call
// that got through, repeats included).
type Probe struct {
	partner string // the partner's URL, PARTNER_URL
	client  *http.Client
}

// NewProbe returns the probe of the effect whose environment env gives
// (the consumer's, as the stack resolves it). It reads no table: db is
// not used.
func NewProbe(_ *dynamodb.Client, env func(string) string) *Probe {
	return &Probe{partner: env(contract.EnvPartnerURL), client: &http.Client{Timeout: 30 * time.Second}}
}

// Message is a payment for key; variant 0 always the same one, any other
// variant the same key with another amount.
func (p *Probe) Message(key string, variant int) ([]byte, error) {
	return json.Marshal(map[string]any{
		contract.KeyField: key, "amountCents": 1999 + variant, "currency": "EUR", "payee": "acct-" + key,
	})
}

// Seed writes the data the effect needs for keys: a notice needs none.
func (p *Probe) Seed(context.Context, []string) error { return nil }

// Applied returns how many times the partner was notified of each of
// keys: GET <url> (a JSON object, key to the number of calls that got
// through), those of keys. Keys never notified are absent.
func (p *Probe) Applied(ctx context.Context, keys []string) (map[string]int, error) {
	if p.partner == "" {
		return nil, fmt.Errorf("probe: no partner to ask (%s is not set)", contract.EnvPartnerURL)
	}
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
	for _, k := range keys {
		if n := all[k]; n > 0 {
			out[k] = n
		}
	}
	return out, nil
}

// Modes: a call to a remote system cannot join the receipt's
// transaction, so lease mode only.
func (p *Probe) Modes() []string { return []string{consumer.ModeLease} }
