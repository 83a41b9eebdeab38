package hotel

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// The hotel's second consumer: each confirmed booking is posted to the
// webhook the booking's agent registered (a travel agency's endpoint), once.
// That endpoint is the customer's: the hotel cannot ask it whether a call
// arrived, so the consumer has no Reconcile. It runs in lease mode with
// the policy retry: when an attempt's outcome is unknown (the reply was
// lost, the call timed out, the instance died after it), the next one
// posts again with the same Idempotency-Key, and the agency, which
// deduplicates by it, sees one confirmation. At least once, at most twice
// in that window, each second call counted (metric Rerun).

const (
	// EnvWebhookURL is the webhook's URL, a plain setting.
	EnvWebhookURL = "WEBHOOK_URL"
	// NotificationsNamespace is the notifications consumer's idem
	// namespace (receipts, metrics).
	NotificationsNamespace = "notifications"
)

// Webhook posts confirmations to URL.
type Webhook struct {
	URL    string
	Client *http.Client
}

// Confirmed is what the webhook is posted: the booking, confirmed.
type Confirmed struct {
	BookingID string `json:"bookingId"`
	Room      string `json:"room"`
	CheckIn   string `json:"checkIn"`
	Nights    int    `json:"nights"`
}

// Notify is the lease-mode effect: POST the confirmation with the
// booking id as Idempotency-Key. The answer decides what the Guard does
// next: 2xx, done; a refusal (4xx but 409), or a request that provably
// never left (idem.NotSent: the dial failed), nothing was posted
// (idem.Definite: the next delivery posts at once); anything else (a 5xx,
// a 409, a timeout, a lost reply), it may have arrived: an unknown
// outcome, posted again after the lease (retry).
func (w Webhook) Notify(ctx context.Context, key string, msg events.SQSMessage) ([]byte, error) {
	var b Booking
	if err := json.Unmarshal([]byte(msg.Body), &b); err != nil {
		return nil, idem.Definite(fmt.Errorf("%w: %v", ErrBadBooking, err))
	}
	if b.Room == "" || b.Nights < 1 {
		return nil, idem.Definite(fmt.Errorf("%w: room %q, %d nights", ErrBadBooking, b.Room, b.Nights))
	}
	body, err := json.Marshal(Confirmed{BookingID: key, Room: b.Room, CheckIn: b.CheckIn, Nights: b.Nights})
	if err != nil {
		return nil, idem.Definite(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return nil, idem.Definite(fmt.Errorf("hotel: webhook request: %w", err))
	}
	// Never sent again by the client itself: Go's transport replays a
	// request with an Idempotency-Key on a reused connection that broke,
	// a second call inside one attempt that nothing would count.
	req.GetBody = nil
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := w.Client.Do(req)
	if err != nil {
		err = idem.Classify(fmt.Errorf("hotel: webhook: %w", err), "webhook-unreachable")
		if idem.NotSent(err) {
			return nil, idem.Definite(err)
		}
		return nil, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // so that the connection serves the next call
	switch code := resp.StatusCode; {
	case code/100 == 2:
		return json.Marshal(map[string]any{"bookingId": key, "status": code})
	case code/100 == 4 && code != http.StatusConflict:
		// Refused (a bad payload, a revoked endpoint): nothing was
		// posted. (409: the agency is still working on the same key.)
		return nil, idem.Definite(idem.Classify(fmt.Errorf("hotel: webhook: %s", resp.Status), "webhook-refused-"+strconv.Itoa(code)))
	default:
		return nil, idem.Classify(fmt.Errorf("hotel: webhook: %s", resp.Status), "webhook-"+strconv.Itoa(code))
	}
}
