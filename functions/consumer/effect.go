package main

// THE BUSINESS EFFECT. This file is the one a fork replaces: it issues a
// gift card for an order. Everything else in the function (configuration,
// the guard, batching, logs, metrics) stays as it is. It implements Effect
// (handler.go); main.go builds it with NewGiftCards.
//
// The ledger update is deliberately not idempotent: it adds 1 to "issued",
// so any double effect shows as issued > 1 on the order's ledger item. The
// integration tests read it to prove the exactly-once claims.

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
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// Ledger is the part of the DynamoDB client the effect uses.
type Ledger interface {
	UpdateItem(ctx context.Context, params *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

var _ Ledger = (*dynamodb.Client)(nil)

// ErrBadOrder: the message body is not a valid order. Retrying cannot fix
// it; the record fails and ends in the dead-letter queue with this reason.
var ErrBadOrder = errors.New("consumer: malformed order")

// Order is the message body.
type Order struct {
	OrderID     string `json:"orderId"`
	Customer    string `json:"customer"`
	AmountCents int64  `json:"amountCents"`
}

// parseOrder decodes body; key is the idempotency key, which the body's
// orderId must match when it has one.
func parseOrder(key, body string) (Order, error) {
	var o Order
	if err := json.Unmarshal([]byte(body), &o); err != nil {
		return Order{}, fmt.Errorf("%w: %v", ErrBadOrder, err)
	}
	switch {
	case o.OrderID == "":
		o.OrderID = key
	case o.OrderID != key:
		return Order{}, fmt.Errorf("%w: the body's orderId differs from the orderId attribute", ErrBadOrder)
	}
	if o.AmountCents < 0 {
		return Order{}, fmt.Errorf("%w: negative amountCents %d", ErrBadOrder, o.AmountCents)
	}
	return o, nil
}

// orderOf is the Order the effect runs on, parsed again because sqsbatch
// hands the effect the key and raw message, not what orderKey parsed.
// orderKey already accepted this key and body (a bad order is Rejected before
// the Guard runs), so ErrBadOrder cannot come from here; the error is kept
// only so that an effect wired to another key function never gets a zero Order.
func orderOf(key string, msg events.SQSMessage) (Order, error) {
	return parseOrder(key, msg.Body)
}

// GiftCard is the effect's result, stored with the receipt and replayed to
// duplicates.
type GiftCard struct {
	ID      string `json:"giftCardId"`
	OrderID string `json:"orderId"`
}

// giftCardFor derives the card id from the order, so every attempt sends
// the same request downstream: a remote system deduplicating on the
// Idempotency-Key would reject a retry whose body changed.
func giftCardFor(o Order) GiftCard {
	sum := sha256.Sum256([]byte("gift-card\x00" + o.OrderID))
	return GiftCard{ID: "gc_" + hex.EncodeToString(sum[:10]), OrderID: o.OrderID}
}

// GiftCards issues gift cards.
type GiftCards struct {
	ledger Ledger
	table  string
	client *http.Client
	url    string // optional: POST each issuance here too
	now    func() time.Time
}

var _ Effect = (*GiftCards)(nil)

// NewGiftCards returns the effect: it records each issuance in the ledger
// table and, if url is not empty, POSTs it there with client first.
func NewGiftCards(ledger Ledger, table, url string, client *http.Client) *GiftCards {
	return &GiftCards{ledger: ledger, table: table, client: client, url: url, now: time.Now}
}

// Issue is the lease-mode effect: notify the remote system (when
// configured), then record the issuance in the ledger.
func (g *GiftCards) Issue(ctx context.Context, key string, msg events.SQSMessage) ([]byte, error) {
	order, err := orderOf(key, msg)
	if err != nil {
		return nil, err
	}
	card := giftCardFor(order)
	// The remote call goes first and the ledger write last: if the remote
	// call fails, nothing was counted and the retry is clean; if the ledger
	// write fails, the retry repeats a remote call that the Idempotency-Key
	// lets the remote system deduplicate.
	if g.url != "" {
		if err := g.post(ctx, order, card); err != nil {
			return nil, err
		}
	}
	in, err := g.ledgerUpdate(ctx, order, card)
	if err != nil {
		return nil, err
	}
	if _, err := g.ledger.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 in.TableName,
		Key:                       in.Key,
		UpdateExpression:          in.UpdateExpression,
		ExpressionAttributeNames:  in.ExpressionAttributeNames,
		ExpressionAttributeValues: in.ExpressionAttributeValues,
	}); err != nil {
		return nil, fmt.Errorf("consumer: ledger update: %w", err)
	}
	return json.Marshal(card)
}

// IssueTx is the transactional-mode effect: the same ledger update, returned
// for the Guard to commit with the receipt. It makes no call of its own (it
// runs for duplicates too), so transactional mode is for effects that are
// DynamoDB writes only: EFFECT_URL is refused in that mode.
func (g *GiftCards) IssueTx(ctx context.Context, key string, msg events.SQSMessage) (idem.TxEffect, error) {
	order, err := orderOf(key, msg)
	if err != nil {
		return idem.TxEffect{}, err
	}
	card := giftCardFor(order)
	update, err := g.ledgerUpdate(ctx, order, card)
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
func (g *GiftCards) ledgerUpdate(ctx context.Context, o Order, card GiftCard) (*types.Update, error) {
	upd := expression.Add(expression.Name("issued"), expression.Value(1)).
		Set(expression.Name("giftCardId"), expression.Value(card.ID)).
		Set(expression.Name("customer"), expression.Value(o.Customer)).
		Set(expression.Name("amountCents"), expression.Value(o.AmountCents)).
		Set(expression.Name("updatedAt"), expression.Value(g.now().UnixMilli()))
	if l, ok := idem.LeaseFromContext(ctx); ok {
		upd = upd.Set(expression.Name("lastAttempt"), expression.Value(l.Attempt))
	}
	expr, err := expression.NewBuilder().WithUpdate(upd).Build()
	if err != nil {
		return nil, fmt.Errorf("consumer: ledger expression: %w", err)
	}
	key, err := attributevalue.MarshalMap(map[string]string{"orderId": o.OrderID})
	if err != nil {
		return nil, fmt.Errorf("consumer: ledger key: %w", err)
	}
	return &types.Update{
		TableName:                 aws.String(g.table),
		Key:                       key,
		UpdateExpression:          expr.Update(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	}, nil
}

// post tells the remote system. The Idempotency-Key lets it deduplicate a
// retry; the Fencing-Token (the attempt number, increasing with every
// takeover) lets it reject a late request of an attempt whose lease was
// taken over.
func (g *GiftCards) post(ctx context.Context, o Order, card GiftCard) error {
	body, err := json.Marshal(struct {
		Order
		GiftCardID string `json:"giftCardId"`
	}{o, card.ID})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("consumer: effect request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", o.OrderID)
	if l, ok := idem.LeaseFromContext(ctx); ok {
		req.Header.Set("Fencing-Token", strconv.Itoa(l.Attempt))
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return fmt.Errorf("consumer: effect request: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("consumer: effect request: %s", resp.Status)
	}
	return nil
}
