// Package effect is THE business effect of the template: it issues a gift
// card per order. A fork replaces this package (effect.go, probe.go and
// their tests) and nothing else of the consumer: configuration, the guard,
// batching, logs and metrics are the runtime's (pkg/idem/consumer).
//
// In lease mode the card is issued by a partner, a remote system called
// over HTTP (EFFECT_URL) with the order's key as its Idempotency-Key: the
// effect this project exists for. When a call's outcome is unknown (the
// reply was lost, the call timed out, the Lambda died after it), the
// attempt that takes the record over asks the partner first (Reconcile:
// GET EFFECT_URL/<key>) and issues nothing again if the card exists. In
// transactional mode the card is a ledger item (LEDGER_TABLE) committed
// with the receipt; its update is deliberately not idempotent (ADD issued
// 1), so a double effect would show as issued > 1. The probe (probe.go)
// counts the partner's calls or the ledger to prove the exactly-once
// claims.
package effect

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
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
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// Setup builds the effect at init: consumer.Start(effect.Setup).
func Setup(_ context.Context, rt *consumer.Runtime) (consumer.Effect, error) {
	table := rt.Env.Required(contract.EnvLedgerTable)
	url := rt.Env.HTTPURL(contract.EnvEffectURL)
	switch {
	case url != "" && rt.Config.Mode == consumer.ModeTransactional:
		rt.Env.Fail(contract.EnvEffectURL, "set, but %s=%s only commits DynamoDB writes and would never call it",
			consumer.EnvMode, consumer.ModeTransactional)
	case url == "" && rt.Config.Mode == consumer.ModeLease:
		rt.Env.Fail(contract.EnvEffectURL, "not set: %s=%s issues each card by calling the partner there",
			consumer.EnvMode, consumer.ModeLease)
	}
	// No client timeout: the call is bounded by the attempt's context
	// (the lease), and a deadline is an unknown outcome, never definite.
	g := NewGiftCards(table, url, &http.Client{})
	return consumer.Effect{Lease: g.Issue, Reconcile: g.Reconcile, Tx: g.IssueTx}, nil
}

// ErrBadOrder: the message body is not a valid order. Retrying cannot fix
// it; the record fails and ends in the dead-letter queue with this reason.
var ErrBadOrder = errors.New("effect: malformed order")

// Order is the message body; its key (contract.KeyField) is the runtime's.
type Order struct {
	Customer    string `json:"customer"`
	AmountCents int64  `json:"amountCents"`
}

func parseOrder(body string) (Order, error) {
	var o Order
	if err := json.Unmarshal([]byte(body), &o); err != nil {
		return Order{}, fmt.Errorf("%w: %v", ErrBadOrder, err)
	}
	if o.AmountCents < 0 {
		return Order{}, fmt.Errorf("%w: negative amountCents %d", ErrBadOrder, o.AmountCents)
	}
	return o, nil
}

// GiftCard is the effect's result, stored with the receipt and replayed to
// duplicates.
type GiftCard struct {
	ID  string `json:"giftCardId"`
	Key string `json:"key"`
}

// giftCardFor derives the card id from the key, so every attempt sends the
// same request downstream: a remote system deduplicating on the
// Idempotency-Key would reject a retry whose body changed.
func giftCardFor(key string) GiftCard {
	sum := sha256.Sum256([]byte("gift-card\x00" + key))
	return GiftCard{ID: "gc_" + hex.EncodeToString(sum[:10]), Key: key}
}

// GiftCards issues gift cards.
type GiftCards struct {
	table  string       // the ledger (transactional mode)
	url    string       // the partner (lease mode)
	client *http.Client // calls the partner
	now    func() time.Time
}

// NewGiftCards returns the effect: in lease mode it has the partner at url
// issue each card, with client; in transactional mode it adds each card to
// the ledger table.
func NewGiftCards(table, url string, client *http.Client) *GiftCards {
	return &GiftCards{table: table, url: url, client: client, now: time.Now}
}

// Issue is the lease-mode effect: the partner issues the card. Its answer
// decides what the Guard does next: 2xx, issued; a refusal (4xx), nothing
// took place (Definite: the next delivery tries again at once); anything
// else (a 5xx, a timeout, a lost reply), the card may or may not exist:
// the next attempt reconciles.
func (g *GiftCards) Issue(ctx context.Context, key string, msg events.SQSMessage) ([]byte, error) {
	order, err := parseOrder(msg.Body)
	if err != nil {
		return nil, idem.Definite(idem.Classify(err, "bad-order"))
	}
	card := giftCardFor(key)
	if err := g.post(ctx, key, order, card); err != nil {
		return nil, err
	}
	return json.Marshal(card)
}

// Reconcile is asked, in lease mode, whether the card for key was issued
// before an attempt that takes over an unknown outcome runs Issue again:
// GET <url>/<key>, which the partner answers 200 for a key it issued and
// 404 for one it never did. Anything else: it cannot tell (the Guard's
// policy decides: retry or hold).
func (g *GiftCards) Reconcile(ctx context.Context, key string, _ events.SQSMessage) (bool, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(g.url, "/")+"/"+url.PathEscape(key), nil)
	if err != nil {
		return false, nil, fmt.Errorf("effect: lookup: %w", err)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return false, nil, idem.Classify(fmt.Errorf("effect: lookup: %w", err), "remote-unreachable")
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch resp.StatusCode {
	case http.StatusOK:
		result, err := json.Marshal(giftCardFor(key))
		return true, result, err
	case http.StatusNotFound:
		return false, nil, nil
	}
	return false, nil, idem.Classify(fmt.Errorf("effect: lookup: %s", resp.Status), "remote-lookup-"+strconv.Itoa(resp.StatusCode))
}

// IssueTx is the transactional-mode effect: the ledger update, returned
// for the Guard to commit with the receipt. It makes no call of its own
// (it runs for duplicates too): Setup refuses EFFECT_URL in that mode.
func (g *GiftCards) IssueTx(ctx context.Context, key string, msg events.SQSMessage) (idem.TxEffect, error) {
	order, err := parseOrder(msg.Body)
	if err != nil {
		return idem.TxEffect{}, err
	}
	card := giftCardFor(key)
	update, err := g.ledgerUpdate(key, order, card)
	if err != nil {
		return idem.TxEffect{}, err
	}
	result, err := json.Marshal(card)
	if err != nil {
		return idem.TxEffect{}, err
	}
	return idem.TxEffect{Writes: []any{types.TransactWriteItem{Update: update}}, Result: result}, nil
}

// ledgerUpdate is the ledger write: ADD issued 1 (not idempotent on
// purpose) and the card's details.
func (g *GiftCards) ledgerUpdate(key string, o Order, card GiftCard) (*types.Update, error) {
	upd := expression.Add(expression.Name("issued"), expression.Value(1)).
		Set(expression.Name("giftCardId"), expression.Value(card.ID)).
		Set(expression.Name("customer"), expression.Value(o.Customer)).
		Set(expression.Name("amountCents"), expression.Value(o.AmountCents)).
		Set(expression.Name("updatedAt"), expression.Value(g.now().UnixMilli()))
	expr, err := expression.NewBuilder().WithUpdate(upd).Build()
	if err != nil {
		return nil, fmt.Errorf("effect: ledger expression: %w", err)
	}
	item, err := attributevalue.MarshalMap(map[string]string{contract.KeyField: key})
	if err != nil {
		return nil, fmt.Errorf("effect: ledger key: %w", err)
	}
	return &types.Update{
		TableName:                 aws.String(g.table),
		Key:                       item,
		UpdateExpression:          expr.Update(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	}, nil
}

// post has the partner issue the card. The Idempotency-Key lets it
// deduplicate a retry and answer the lookup of Reconcile; the
// Fencing-Token (the attempt number, increasing with every takeover) lets
// it reject a late request of an attempt whose lease was taken over.
func (g *GiftCards) post(ctx context.Context, key string, o Order, card GiftCard) error {
	body, err := json.Marshal(struct {
		Order
		GiftCard
	}{o, card})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.url, bytes.NewReader(body))
	if err != nil {
		return idem.Definite(fmt.Errorf("effect: request: %w", err))
	}
	// Never sent again by the client itself: Go's transport replays a
	// request with an Idempotency-Key on a reused connection that broke,
	// which is exactly a lost reply; the next attempt reconciles instead.
	req.GetBody = nil
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	if l, ok := idem.LeaseFromContext(ctx); ok {
		req.Header.Set("Fencing-Token", strconv.Itoa(l.Attempt))
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return idem.Classify(fmt.Errorf("effect: request: %w", err), "remote-unreachable")
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch code := resp.StatusCode; {
	case code/100 == 2:
		return nil
	case code/100 == 4 && code != http.StatusConflict:
		// Refused: nothing was done. (409: the remote system is still
		// working on the same key.)
		return idem.Definite(idem.Classify(fmt.Errorf("effect: request: %s", resp.Status), "remote-refused-"+strconv.Itoa(code)))
	}
	return idem.Classify(fmt.Errorf("effect: request: %s", resp.Status), "remote-"+strconv.Itoa(resp.StatusCode))
}
