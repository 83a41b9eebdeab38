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

// Probe is the effect's side of the proof: orders for keys, and how often
// the PSP captured each. The effect writes no table: the proof asks the
// PSP, which in the suite is its stand-in (it counts every capture that got
// through, repeats included, so a double capture shows). A real PSP has no
// such count; the proof's stand-in does.
type Probe struct {
	psp    string // the PSP's URL, PSP_URL
	client *http.Client
}

// NewProbe returns the probe of the effect whose environment env gives
// (the consumer's, as the stack resolves it). It reads no table: db is
// not used.
func NewProbe(_ *dynamodb.Client, env func(string) string) *Probe {
	return &Probe{psp: env(contract.EnvPSPURL), client: &http.Client{Timeout: 30 * time.Second}}
}

// Message is an order for key, its key in the body; variant 0 always the
// same one, any other variant the same key with another amount.
func (p *Probe) Message(key string, variant int) ([]byte, error) {
	return json.Marshal(map[string]any{
		contract.KeyField: key, "amountCents": 4200 + variant, "currency": "EUR", "paymentMethod": "pm_" + key,
	})
}

// Seed writes the data the effect needs for keys: a capture needs none.
func (p *Probe) Seed(context.Context, []string) error { return nil }

// Applied returns how many times the PSP captured each of keys: GET <url>
// (the stand-in's count per key, calls that got through), those of keys.
// Keys never captured are absent.
func (p *Probe) Applied(ctx context.Context, keys []string) (map[string]int, error) {
	if p.psp == "" {
		return nil, fmt.Errorf("probe: no PSP to ask (%s is not set)", contract.EnvPSPURL)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.psp, nil)
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("probe: ask the PSP: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("probe: the PSP at %s answered %s", p.psp, resp.Status)
	}
	var all map[string]int
	if err := json.NewDecoder(resp.Body).Decode(&all); err != nil {
		return nil, fmt.Errorf("probe: the PSP's counts: %w", err)
	}
	out := map[string]int{}
	for _, k := range keys {
		if n := all[k]; n > 0 {
			out[k] = n
		}
	}
	return out, nil
}

// Modes: a capture at a PSP cannot join the receipt's transaction, so
// lease mode only.
func (p *Probe) Modes() []string { return []string{consumer.ModeLease} }
