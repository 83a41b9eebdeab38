// Package effect is the business effect: it delivers each order event to
// a customer's webhook, over HTTP (WEBHOOK_URL), with the event's key as
// the Idempotency-Key and the Webhook-Id (lease mode). A customer's
// endpoint cannot be asked whether an event arrived, so the effect has no
// Reconcile, and the app runs an unknown outcome again (infra/config.go:
// UnknownOutcome = consumer.UnknownRetry): at least once — an event whose
// reply was lost, or whose Lambda died after the call, is delivered a
// second time (counted: metric Rerun), which a webhook's receiver is told
// to expect and deduplicate by its Webhook-Id; it is never dropped for it.
//
// A delivery that provably never left (idem.NotSent) or that the
// endpoint refused (4xx but 409 and 429) is definite: nothing arrived,
// the next delivery sends it, not counted as a second one.
package effect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// Setup builds the effect at init: consumer.Start(effect.Setup). Lease
// mode only (a call to a customer cannot join the receipt's
// transaction): the runtime refuses transactional mode.
func Setup(_ context.Context, rt *consumer.Runtime) (consumer.Effect, error) {
	hook := rt.Env.HTTPURL(contract.EnvWebhookURL)
	if hook == "" && rt.Config.Mode == consumer.ModeLease {
		rt.Env.Fail(contract.EnvWebhookURL, "not set: each event is delivered to the customer's endpoint there")
	}
	// No client timeout: the call is bounded by the attempt's context
	// (the lease), and a deadline is an unknown outcome, never definite.
	d := NewDeliverer(hook, &http.Client{})
	return consumer.Effect{Lease: d.Deliver}, nil // no Reconcile: the endpoint cannot be asked
}

// ErrBadEvent: the body is not a valid event. Retrying cannot fix it; the
// record fails (definite: nothing was sent) and ends in the DLQ.
var ErrBadEvent = errors.New("effect: malformed event")

// Event is the message body; its key (contract.KeyField) is the runtime's.
type Event struct {
	EventID string          `json:"eventId"`
	Type    string          `json:"type"`
	Data    json.RawMessage `json:"data"`
}

func parseEvent(key, body string) (Event, error) {
	var e Event
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		return Event{}, fmt.Errorf("%w: %v", ErrBadEvent, err)
	}
	switch {
	case !strings.HasPrefix(e.Type, "order."):
		return Event{}, fmt.Errorf("%w: type %q, want order.*", ErrBadEvent, e.Type)
	case len(e.Data) == 0 || e.Data[0] != '{':
		return Event{}, fmt.Errorf("%w: data must be an object", ErrBadEvent)
	}
	e.EventID = key
	return e, nil
}

// Delivery is the effect's result, stored with the receipt and replayed to
// duplicates.
type Delivery struct {
	EventID string `json:"eventId"`
	Status  int    `json:"status"`
}

// Deliverer delivers events to the endpoint at url.
type Deliverer struct {
	url    string
	client *http.Client
}

// NewDeliverer returns the effect: it delivers to url, with client.
func NewDeliverer(url string, client *http.Client) *Deliverer {
	return &Deliverer{url: url, client: client}
}

// Deliver is the lease-mode effect: POST the event to the endpoint. Its
// error decides what the Guard does next (classify, below).
func (d *Deliverer) Deliver(ctx context.Context, key string, msg events.SQSMessage) ([]byte, error) {
	e, err := parseEvent(key, msg.Body)
	if err != nil {
		return nil, idem.Definite(idem.Classify(err, "bad-event"))
	}
	body, err := json.Marshal(e)
	if err != nil {
		return nil, idem.Definite(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.url, bytes.NewReader(body))
	if err != nil {
		return nil, idem.Definite(fmt.Errorf("effect: deliver: %w", err))
	}
	// One attempt, one call: without GetBody Go's transport cannot send
	// it again by itself on a broken kept-alive connection.
	req.GetBody = nil
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Webhook-Id", key)
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, classify(fmt.Errorf("effect: deliver: %w", err), 0)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return nil, classify(fmt.Errorf("effect: deliver: %s", resp.Status), resp.StatusCode)
	}
	return json.Marshal(Delivery{EventID: key, Status: resp.StatusCode})
}

// classify says whether err, the failure of a delivery answered with
// status (0: no answer), is definite — nothing arrived, the next delivery
// sends it, and it is not a second one — or an unknown outcome, which the
// app's policy (retry) runs again, counted:
//
//   - the request never left (idem.NotSent): definite;
//   - the endpoint refused it (4xx but 409 and 429, which ask to come
//     back): definite;
//   - anything else (5xx, a timeout, a reset, a lost reply): unknown.
func classify(err error, status int) error {
	switch {
	case status == 0 && idem.NotSent(err):
		return idem.Definite(idem.Classify(err, "hook-unreachable"))
	case status == 0:
		return idem.Classify(err, "hook-no-answer")
	case status/100 == 4 && status != http.StatusConflict && status != http.StatusTooManyRequests:
		return idem.Definite(idem.Classify(err, "hook-refused-"+strconv.Itoa(status)))
	}
	return idem.Classify(err, "hook-"+strconv.Itoa(status))
}
