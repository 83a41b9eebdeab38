// Package effect is THE business effect of the template: it issues a gift
// card per order. A fork replaces this package (effect.go, probe.go and
// their tests) and nothing else of the consumer: configuration, the guard,
// batching, logs and metrics are the runtime's (pkg/idem/consumer).
//
// The ledger update is deliberately not idempotent: it adds 1 to "issued",
// so any double effect shows as issued > 1 on the order's ledger item. The
// probe (probe.go) reads it to prove the exactly-once claims. In lease mode
// an attempt that takes over an unknown outcome (a ledger write that timed
// out although it may have been applied, a crash) reads the order's
// ledger item first (Reconcile): issued, it is done, and nothing runs
// again.
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
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// Setup builds the effect at init: consumer.Start(effect.Setup).
func Setup(_ context.Context, rt *consumer.Runtime) (consumer.Effect, error) {
	table := rt.Env.Required(contract.EnvLedgerTable)
	url := rt.Env.HTTPURL(contract.EnvEffectURL)
	if url != "" && rt.Config.Mode == consumer.ModeTransactional {
		rt.Env.Fail(contract.EnvEffectURL, "set, but %s=%s only commits DynamoDB writes and would never call it",
			consumer.EnvMode, consumer.ModeTransactional)
	}
	g := NewGiftCards(rt.DynamoDB, table, url, &http.Client{})
	return consumer.Effect{Lease: g.Issue, Reconcile: g.Reconcile, Tx: g.IssueTx}, nil
}

// Ledger is the part of the DynamoDB client the effect uses.
type Ledger interface {
	UpdateItem(ctx context.Context, params *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	GetItem(ctx context.Context, params *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

var _ Ledger = (*dynamodb.Client)(nil)

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
	ledger Ledger
	table  string
	client *http.Client
	url    string // optional: POST each issuance here too
	now    func() time.Time
}

// NewGiftCards returns the effect: it records each issuance in the ledger
// table and, if url is not empty, POSTs it there with client first.
func NewGiftCards(ledger Ledger, table, url string, client *http.Client) *GiftCards {
	return &GiftCards{ledger: ledger, table: table, client: client, url: url, now: time.Now}
}

// Issue is the lease-mode effect: notify the remote system (when
// configured), then record the issuance in the ledger.
func (g *GiftCards) Issue(ctx context.Context, key string, msg events.SQSMessage) ([]byte, error) {
	order, err := parseOrder(msg.Body)
	if err != nil {
		return nil, idem.Definite(idem.Classify(err, "bad-order"))
	}
	card := giftCardFor(key)
	// The remote call goes first and the ledger write last: if the remote
	// call fails, nothing was counted and the retry is clean; if the ledger
	// write fails, the retry repeats a remote call that the Idempotency-Key
	// lets the remote system deduplicate.
	if g.url != "" {
		if err := g.post(ctx, key, order, card); err != nil {
			return nil, err
		}
	}
	in, err := g.ledgerUpdate(ctx, key, order, card)
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
		// Not definite: a write that timed out may have been applied.
		return nil, idem.Classify(fmt.Errorf("effect: ledger update: %w", err), "ledger-update")
	}
	return json.Marshal(card)
}

// Reconcile is asked, in lease mode, whether the card for key was issued
// before an attempt that takes over an unknown outcome runs Issue again:
// the ledger write is the effect's last step, so an order whose ledger
// item counts an issuance had its card issued (and its remote call made).
// It reads the item with a consistent read.
func (g *GiftCards) Reconcile(ctx context.Context, key string, _ events.SQSMessage) (bool, []byte, error) {
	item, err := attributevalue.MarshalMap(map[string]string{contract.KeyField: key})
	if err != nil {
		return false, nil, fmt.Errorf("effect: ledger key: %w", err)
	}
	out, err := g.ledger.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(g.table), Key: item, ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String("issued"),
	})
	if err != nil {
		return false, nil, idem.Classify(fmt.Errorf("effect: ledger read: %w", err), "ledger-read")
	}
	var row struct {
		Issued int `dynamodbav:"issued"`
	}
	if err := attributevalue.UnmarshalMap(out.Item, &row); err != nil {
		return false, nil, fmt.Errorf("effect: ledger item: %w", err)
	}
	if row.Issued == 0 {
		return false, nil, nil
	}
	result, err := json.Marshal(giftCardFor(key))
	return true, result, err
}

// IssueTx is the transactional-mode effect: the same ledger update,
// returned for the Guard to commit with the receipt. It makes no call of
// its own (it runs for duplicates too): Setup refuses EFFECT_URL in that
// mode.
func (g *GiftCards) IssueTx(ctx context.Context, key string, msg events.SQSMessage) (idem.TxEffect, error) {
	order, err := parseOrder(msg.Body)
	if err != nil {
		return idem.TxEffect{}, err
	}
	card := giftCardFor(key)
	update, err := g.ledgerUpdate(ctx, key, order, card)
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
func (g *GiftCards) ledgerUpdate(ctx context.Context, key string, o Order, card GiftCard) (*types.Update, error) {
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

// post tells the remote system. The Idempotency-Key lets it deduplicate a
// retry; the Fencing-Token (the attempt number, increasing with every
// takeover) lets it reject a late request of an attempt whose lease was
// taken over.
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
