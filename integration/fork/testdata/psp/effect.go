// Package effect is the business effect: it captures each order's payment
// at a payment service provider (PSP), over HTTP (PSP_URL), with the
// order's key as the Idempotency-Key (lease mode). The PSP keeps that key
// for a while (a day, a week: its documentation says) and answers a repeat
// with the first capture; it has no lookup, so the effect has no
// Reconcile: an unknown outcome (a lost reply, a timeout, a 5xx, the
// Lambda dying after the call) cannot be asked about. The app holds such
// a key (infra/config.go: UnknownOutcome = consumer.UnknownHold): a
// second capture is worse than a delay, and an operator settles it
// (docs/template.md, "A remote that cannot be asked").
//
// Which errors are definite matters more without a Reconcile: every
// error that is not becomes an operator's work. Definite are a request
// that provably never left (idem.NotSent: the PSP's name did not resolve,
// the connection was refused) and the PSP's refusal (4xx but 409);
// anything else may have been captured.
package effect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// Setup builds the effect at init: consumer.Start(effect.Setup). Lease
// mode only (a capture at a PSP cannot join the receipt's transaction):
// the runtime refuses transactional mode.
func Setup(_ context.Context, rt *consumer.Runtime) (consumer.Effect, error) {
	psp := rt.Env.HTTPURL(contract.EnvPSPURL)
	if psp == "" && rt.Config.Mode == consumer.ModeLease {
		rt.Env.Fail(contract.EnvPSPURL, "not set: each order's payment is captured at the PSP there")
	}
	// No client timeout: the call is bounded by the attempt's context
	// (the lease), and a deadline is an unknown outcome, never definite.
	c := NewCapturer(psp, &http.Client{})
	return consumer.Effect{Lease: c.Capture}, nil // no Reconcile: the PSP has no lookup
}

// ErrBadOrder: the body is not a valid order to capture. Retrying cannot
// fix it; the record fails (definite: nothing was sent) and ends in the
// DLQ.
var ErrBadOrder = errors.New("effect: malformed order")

// Order is the message body; its key (contract.KeyField) is the body's
// orderId, which the message attribute, if any, must equal.
type Order struct {
	OrderID       string `json:"orderId"`
	AmountCents   int64  `json:"amountCents"`
	Currency      string `json:"currency"`
	PaymentMethod string `json:"paymentMethod"`
}

var currency = regexp.MustCompile(`^[A-Z]{3}$`)

func parseOrder(key, body string) (Order, error) {
	var o Order
	if err := json.Unmarshal([]byte(body), &o); err != nil {
		return Order{}, fmt.Errorf("%w: %v", ErrBadOrder, err)
	}
	switch {
	case o.AmountCents <= 0:
		return Order{}, fmt.Errorf("%w: amountCents %d, want > 0", ErrBadOrder, o.AmountCents)
	case !currency.MatchString(o.Currency):
		return Order{}, fmt.Errorf("%w: currency %q, want an ISO 4217 code", ErrBadOrder, o.Currency)
	case strings.TrimSpace(o.PaymentMethod) == "":
		return Order{}, fmt.Errorf("%w: no paymentMethod", ErrBadOrder)
	}
	o.OrderID = key // what the PSP is told: the key, however it came
	return o, nil
}

// Capture is the effect's result, stored with the receipt and replayed to
// duplicates: the order and the PSP's reference for its capture.
type Capture struct {
	OrderID string `json:"orderId"`
	PSPRef  string `json:"pspRef,omitempty"`
}

// Capturer captures payments at the PSP at url.
type Capturer struct {
	url    string
	client *http.Client
}

// NewCapturer returns the effect: it captures at the PSP at url, with
// client.
func NewCapturer(url string, client *http.Client) *Capturer {
	return &Capturer{url: url, client: client}
}

// Capture is the lease-mode effect: POST the capture to the PSP. Its
// error decides what the Guard does next (Classify, below).
func (c *Capturer) Capture(ctx context.Context, key string, msg events.SQSMessage) ([]byte, error) {
	o, err := parseOrder(key, msg.Body)
	if err != nil {
		return nil, idem.Definite(idem.Classify(err, "bad-order"))
	}
	body, err := json.Marshal(o)
	if err != nil {
		return nil, idem.Definite(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, idem.Definite(fmt.Errorf("effect: capture: %w", err))
	}
	// One attempt, one call: Go's transport would send a request with an
	// Idempotency-Key again by itself when a reused connection breaks
	// before the reply; without GetBody it cannot.
	req.GetBody = nil
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, classify(fmt.Errorf("effect: capture: %w", err), 0)
	}
	defer resp.Body.Close()
	reply, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return nil, classify(fmt.Errorf("effect: capture: %s", resp.Status), resp.StatusCode)
	}
	var r struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(reply, &r) // captured is captured: the reference is a courtesy
	return json.Marshal(Capture{OrderID: key, PSPRef: r.ID})
}

// classify says whether err, the failure of a capture answered with
// status (0: no answer), is definite — nothing was captured, the next
// delivery may capture at once — or an unknown outcome, which the app's
// policy holds for an operator:
//
//   - the request never left (idem.NotSent: a name that did not
//     resolve, a connection refused): definite;
//   - the PSP refused it (4xx but 409, which says it is still working on
//     that key): definite;
//   - anything else (5xx, a timeout, a connection reset or closed after
//     the request was written, a lost reply): unknown.
func classify(err error, status int) error {
	switch {
	case status == 0 && idem.NotSent(err):
		return idem.Definite(idem.Classify(err, "psp-unreachable"))
	case status == 0:
		return idem.Classify(err, "psp-no-answer")
	case status/100 == 4 && status != http.StatusConflict:
		return idem.Definite(idem.Classify(err, "psp-refused-"+strconv.Itoa(status)))
	}
	return idem.Classify(err, "psp-"+strconv.Itoa(status))
}
