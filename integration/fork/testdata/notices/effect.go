// Package effect is the business effect: it notifies a payment partner of
// each payment, exactly once, over HTTP (PARTNER_URL), with the payment's
// key as the Idempotency-Key (lease mode). When a call's outcome is
// unknown (the reply was lost, the call timed out, the Lambda died after
// it), the attempt that takes the record over asks the partner first
// (Reconcile: GET PARTNER_URL/<key>) and notifies nothing again if the
// partner has the payment.
package effect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// Setup builds the effect at init: consumer.Start(effect.Setup). The
// effect has lease mode only (a remote call cannot join the receipt's
// transaction): the runtime refuses transactional mode.
func Setup(_ context.Context, rt *consumer.Runtime) (consumer.Effect, error) {
	partner := rt.Env.HTTPURL(contract.EnvPartnerURL)
	if partner == "" && rt.Config.Mode == consumer.ModeLease {
		rt.Env.Fail(contract.EnvPartnerURL, "not set: each payment is notified to the partner there")
	}
	// No client timeout: the call is bounded by the attempt's context
	// (the lease), and a deadline is an unknown outcome, never definite.
	n := NewNotifier(partner, &http.Client{})
	return consumer.Effect{Lease: n.Notify, Reconcile: n.Reconcile}, nil
}

// ErrBadPayment: the body is not a valid payment. Retrying cannot fix it;
// the record fails (definite: nothing was sent) and ends in the DLQ.
var ErrBadPayment = errors.New("effect: malformed payment")

// Payment is the message body. Its key (contract.KeyField) is the
// runtime's: the message attribute, which the body's field, if any, must
// equal.
type Payment struct {
	PaymentID   string `json:"paymentId,omitempty"`
	AmountCents int64  `json:"amountCents"`
	Currency    string `json:"currency"`
	Payee       string `json:"payee"`
}

var currency = regexp.MustCompile(`^[A-Z]{3}$`)

func parsePayment(key, body string) (Payment, error) {
	var p Payment
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		return Payment{}, fmt.Errorf("%w: %v", ErrBadPayment, err)
	}
	switch {
	case p.AmountCents <= 0:
		return Payment{}, fmt.Errorf("%w: amountCents %d, want > 0", ErrBadPayment, p.AmountCents)
	case !currency.MatchString(p.Currency):
		return Payment{}, fmt.Errorf("%w: currency %q, want an ISO 4217 code", ErrBadPayment, p.Currency)
	case strings.TrimSpace(p.Payee) == "":
		return Payment{}, fmt.Errorf("%w: no payee", ErrBadPayment)
	}
	p.PaymentID = key // what the partner is told: the key, however it came
	return p, nil
}

// Notice is the effect's result, stored with the receipt and replayed to
// duplicates: the payment and the partner's reference for its notice.
type Notice struct {
	PaymentID  string `json:"paymentId"`
	PartnerRef string `json:"partnerRef,omitempty"`
}

// Notifier notifies the partner at url of payments.
type Notifier struct {
	url    string
	client *http.Client
}

// NewNotifier returns the effect: it notifies the partner at url, with
// client.
func NewNotifier(url string, client *http.Client) *Notifier {
	return &Notifier{url: url, client: client}
}

// Notify is the lease-mode effect: POST the payment to the partner. Its
// answer decides what the Guard does next: 2xx, notified; a refusal (4xx
// but 409), nothing took place (Definite: the next delivery tries again
// at once); anything else (a 5xx, a 409, a timeout, a lost reply), the
// partner may or may not have it: the next attempt reconciles.
func (n *Notifier) Notify(ctx context.Context, key string, msg events.SQSMessage) ([]byte, error) {
	p, err := parsePayment(key, msg.Body)
	if err != nil {
		return nil, idem.Definite(idem.Classify(err, "bad-payment"))
	}
	body, err := json.Marshal(p)
	if err != nil {
		return nil, idem.Definite(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.url, bytes.NewReader(body))
	if err != nil {
		return nil, idem.Definite(fmt.Errorf("effect: notify: %w", err))
	}
	// One attempt, one call: Go's transport would send a request with an
	// Idempotency-Key again by itself when a reused connection breaks
	// before the reply (the reply lost, the call maybe applied); without
	// GetBody it cannot, and the next attempt reconciles instead.
	req.GetBody = nil
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	if l, ok := idem.LeaseFromContext(ctx); ok {
		// The attempt number grows with every takeover: the partner may
		// reject a late request of an attempt whose lease was taken over.
		req.Header.Set("Fencing-Token", strconv.Itoa(l.Attempt))
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return nil, idem.Classify(fmt.Errorf("effect: notify: %w", err), "partner-unreachable")
	}
	defer resp.Body.Close()
	reply, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	switch code := resp.StatusCode; {
	case code/100 == 2:
		return noticeFor(key, reply)
	case code/100 == 4 && code != http.StatusConflict:
		// Refused: nothing was done. (409: the partner is still working
		// on the same key.)
		return nil, idem.Definite(idem.Classify(fmt.Errorf("effect: notify: %s", resp.Status), "partner-refused-"+strconv.Itoa(code)))
	default:
		return nil, idem.Classify(fmt.Errorf("effect: notify: %s", resp.Status), "partner-"+strconv.Itoa(code))
	}
}

// Reconcile is asked, in lease mode, whether the payment of key was
// notified before an attempt that takes over an unknown outcome runs
// Notify again: GET <url>/<key>, which the partner answers 200 for a key
// it has and 404 for one it never had. Anything else: it cannot tell (the
// Guard's policy decides: retry or hold).
func (n *Notifier) Reconcile(ctx context.Context, key string, _ events.SQSMessage) (bool, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(n.url, "/")+"/"+url.PathEscape(key), nil)
	if err != nil {
		return false, nil, fmt.Errorf("effect: lookup: %w", err)
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return false, nil, idem.Classify(fmt.Errorf("effect: lookup: %w", err), "partner-unreachable")
	}
	defer resp.Body.Close()
	reply, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	switch resp.StatusCode {
	case http.StatusOK:
		result, err := noticeFor(key, reply)
		return true, result, err
	case http.StatusNotFound:
		return false, nil, nil
	}
	return false, nil, idem.Classify(fmt.Errorf("effect: lookup: %s", resp.Status), "partner-lookup-"+strconv.Itoa(resp.StatusCode))
}

// noticeFor is the result for key from the partner's reply, whose "id",
// if it has one, is its reference for the notice.
func noticeFor(key string, reply []byte) ([]byte, error) {
	var r struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(reply, &r) // accepted is accepted: the reference is a courtesy
	return json.Marshal(Notice{PaymentID: key, PartnerRef: r.ID})
}
