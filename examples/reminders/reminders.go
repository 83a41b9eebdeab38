// Package reminders sends each appointment reminder by SMS exactly once:
// a reminder request arrives on the queue (possibly several times), and
// the SMS provider is asked to send it once.
//
// The effect runs in lease mode, since the SMS is a call to a remote
// system: the reminder's key goes downstream as the provider's
// Idempotency-Key, a refusal (4xx other than 409) is definite, and when an
// attempt's outcome is unknown (the reply was lost, the call timed out,
// the instance died after it) the next attempt asks the provider first
// (Reconcile: GET <SMS_URL>/messages/<key>) and sends nothing again if the
// SMS went out. The provider's base URL is a plain setting (SMS_URL); its
// API token is a secret, read from Secrets Manager at cold start
// (SMS_TOKEN holds the secret's ARN).
package reminders

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// The names the stack (infra) and the consumer share.
const (
	// KeyField is the business key, the message attribute (else the
	// body's field) reminderId: a reminder is sent once per id. The stack
	// names it in exactlyonce.Config.Key.
	KeyField = "reminderId"
	// Namespace is the consumer's idem namespace (receipts, metrics).
	Namespace = "reminders"
	// EnvSMSURL is the SMS provider's base URL: a plain setting.
	EnvSMSURL = "SMS_URL"
	// EnvSMSToken holds the ARN of the secret with the provider's API
	// token (exactlyonce.ConsumerProps.Secrets), read at cold start.
	EnvSMSToken = "SMS_TOKEN"
)

// Setup builds the effect at init, once per instance:
// consumer.Start(reminders.Setup). The token is read here, not per
// message; a problem with either variable, the secret included, stops the
// instance at init with every other problem named.
func Setup(ctx context.Context, rt *consumer.Runtime) (consumer.Effect, error) {
	base := rt.Env.HTTPURL(EnvSMSURL)
	if base == "" {
		rt.Env.Fail(EnvSMSURL, "required: the SMS provider's base URL")
	}
	token := rt.Secret(ctx, EnvSMSToken)
	// No client timeout: the call is bounded by the attempt's context
	// (the lease), and a deadline is an unknown outcome, never definite.
	sms := NewSMS(base, token, &http.Client{})
	// No Key function: the key is the stack's Config.Key (IDEM_KEY).
	return consumer.Effect{Lease: sms.Send, Reconcile: sms.Reconcile}, nil
}

// ErrBadReminder: the body is not a valid reminder. Retrying cannot fix
// it; the message ends in the dead-letter queue with this reason.
var ErrBadReminder = errors.New("reminders: malformed reminder")

// Reminder is the message body; its key is the reminderId attribute.
type Reminder struct {
	To      string    `json:"to"` // E.164, e.g. +4915112345678
	Patient string    `json:"patient"`
	Clinic  string    `json:"clinic"`
	At      time.Time `json:"at"` // the appointment, RFC 3339
}

// Text is the SMS. It depends on the reminder only, so every attempt sends
// the same request: a provider deduplicating on the Idempotency-Key may
// refuse a retry whose body changed.
func (r Reminder) Text() string {
	return fmt.Sprintf("Hello %s, this is a reminder of your appointment at %s on %s.",
		r.Patient, r.Clinic, r.At.Format("Mon 2 Jan 2006 at 15:04"))
}

func parseReminder(body string) (Reminder, error) {
	var r Reminder
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		return Reminder{}, fmt.Errorf("%w: %v", ErrBadReminder, err)
	}
	if !strings.HasPrefix(r.To, "+") || r.At.IsZero() {
		return Reminder{}, fmt.Errorf("%w: to %q, at %v", ErrBadReminder, r.To, r.At)
	}
	return r, nil
}

// Sent is the effect's result, stored with the receipt and replayed to
// every copy of the reminder.
type Sent struct {
	ReminderID string `json:"reminderId"`
	SMSID      string `json:"smsId,omitempty"` // the provider's
}

// SMS sends reminders through the provider at base, with its API token.
type SMS struct {
	base   string
	token  string
	client *http.Client
}

// NewSMS returns the effect: the provider at base (SMS_URL) sends each
// reminder, called with client and authorized by token.
func NewSMS(base, token string, client *http.Client) *SMS {
	return &SMS{base: strings.TrimSuffix(base, "/"), token: token, client: client}
}

// Send is the lease-mode effect: POST <base>/messages with the key as the
// Idempotency-Key. The provider's answer decides what the Guard does next:
// 2xx, sent; a refusal (4xx but 409), nothing was sent (idem.Definite: the
// next delivery tries again at once); anything else (a 5xx, a 409, a
// timeout, a lost reply), the SMS may or may not have gone out: the next
// attempt reconciles.
func (s *SMS) Send(ctx context.Context, key string, msg events.SQSMessage) ([]byte, error) {
	r, err := parseReminder(msg.Body)
	if err != nil {
		return nil, idem.Definite(idem.Classify(err, "bad-reminder"))
	}
	body, err := json.Marshal(map[string]string{"to": r.To, "text": r.Text()})
	if err != nil {
		return nil, idem.Definite(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/messages", bytes.NewReader(body))
	if err != nil {
		return nil, idem.Definite(fmt.Errorf("reminders: request: %w", err))
	}
	// Never sent again by the client itself: Go's transport replays a
	// request with an Idempotency-Key on a reused connection that broke,
	// which is exactly a lost reply; the next attempt reconciles instead.
	req.GetBody = nil
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	s.authorize(req)
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, idem.Classify(fmt.Errorf("reminders: request: %w", err), "sms-unreachable")
	}
	reply := read(resp)
	switch code := resp.StatusCode; {
	case code/100 == 2:
		return sent(key, reply)
	case code/100 == 4 && code != http.StatusConflict:
		// Refused (a bad number, a bad token): nothing was sent. (409:
		// the provider is still working on the same key.)
		return nil, idem.Definite(idem.Classify(fmt.Errorf("reminders: request: %s", resp.Status), "sms-refused-"+strconv.Itoa(code)))
	default:
		return nil, idem.Classify(fmt.Errorf("reminders: request: %s", resp.Status), "sms-"+strconv.Itoa(code))
	}
}

// Reconcile is asked, in lease mode, whether the reminder of key went out
// before an attempt that takes over an unknown outcome sends it again:
// GET <base>/messages/<key>, which the provider answers 200 for a message
// it accepted with that Idempotency-Key and 404 for none. Anything else:
// it cannot tell (the consumer's policy decides: retry or hold).
func (s *SMS) Reconcile(ctx context.Context, key string, _ events.SQSMessage) (bool, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/messages/"+url.PathEscape(key), nil)
	if err != nil {
		return false, nil, fmt.Errorf("reminders: lookup: %w", err)
	}
	s.authorize(req)
	resp, err := s.client.Do(req)
	if err != nil {
		return false, nil, idem.Classify(fmt.Errorf("reminders: lookup: %w", err), "sms-unreachable")
	}
	reply := read(resp)
	switch resp.StatusCode {
	case http.StatusOK:
		result, err := sent(key, reply)
		return true, result, err
	case http.StatusNotFound:
		return false, nil, nil
	}
	return false, nil, idem.Classify(fmt.Errorf("reminders: lookup: %s", resp.Status), "sms-lookup-"+strconv.Itoa(resp.StatusCode))
}

func (s *SMS) authorize(req *http.Request) {
	req.Header.Set("Authorization", "Bearer "+s.token)
}

// read is a reply's body (its first 64 KiB), closed so that the
// connection can serve the next call.
func read(resp *http.Response) []byte {
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return b
}

// sent is the result for key from the provider's message, {"id": ...}.
// A reply it cannot read does not undo the SMS: the result then has no
// id.
func sent(key string, reply []byte) ([]byte, error) {
	var m struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(reply, &m)
	return json.Marshal(Sent{ReminderID: key, SMSID: m.ID})
}
