package sim

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/exactlyonce/sqsidem/integration/sim/ddbmodel"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
)

// The tables of a DynamoDB schedule: the receipts, in either key schema,
// and the transactional effect's ledger (one item per key, n applications).
const (
	receiptsTable = "receipts"
	ledgerTable   = "ledger"
	compositeSK   = "SK"
	compositePK   = "PK"
	compositeVal  = "IDEMPOTENCY"
)

// oddNames is a schema of attribute names that need care in expressions:
// reserved words, a dot, a space, a hyphen. A schedule uses it now and then.
var oddNames = dynamostore.Names{PartitionKey: "key", TTL: "ttl", Status: "state", Lease: "fence token",
	LeaseUntil: "lease.until", Attempts: "count", Fingerprint: "hash", Result: "data", NoResult: "no-data",
	UpdatedAt: "timestamp", LastError: "error"}

// dynamoBackend is dynamostore.Store over the DynamoDB model.
type dynamoBackend struct {
	w         *world
	srv       *ddbmodel.Server
	s         *dynamostore.Store
	names     dynamostore.Names
	composite bool
	tokens    bool // transactions carry a ClientRequestToken, as the SDK sets one
}

func newDynamoBackend(w *world) *dynamoBackend {
	b := &dynamoBackend{w: w, srv: ddbmodel.New(), names: dynamostore.DefaultSchema, composite: w.cfg.Seed%2 == 1, tokens: w.cfg.Seed%4 < 2}
	if w.cfg.Seed%8 >= 6 {
		b.names = oddNames
	}
	pk, sk := b.names.PartitionKey, ""
	if b.composite {
		pk, sk = compositePK, compositeSK
	}
	must(b.srv.CreateTable(receiptsTable, pk, sk))
	must(b.srv.CreateTable(ledgerTable, "k", ""))
	if w.cfg.ItemLimit > 0 {
		b.srv.SetItemLimit(w.cfg.ItemLimit)
	}
	b.s = dynamoStore(b.names == oddNames, b.composite)
	return b
}

// dynamoStores are the Stores of the schedules, one per schema, shared by
// them all: a Store is safe for concurrent use and builds its expressions
// once; its requests find their schedule's backend through their context.
var dynamoStores sync.Map // [2]bool{odd, composite} → *dynamostore.Store

func dynamoStore(odd, composite bool) *dynamostore.Store {
	key := [2]bool{odd, composite}
	if s, ok := dynamoStores.Load(key); ok {
		return s.(*dynamostore.Store)
	}
	opts := []dynamostore.Option{dynamostore.WithBackoff(jitter)}
	if odd {
		opts = append(opts, dynamostore.WithSchema(oddNames))
	}
	if composite {
		opts = append(opts, dynamostore.WithCompositeKey(compositePK, compositeSK, compositeVal))
	}
	s, err := dynamostore.New(dynamoWire{}, receiptsTable, opts...)
	must(err)
	actual, _ := dynamoStores.LoadOrStore(key, s)
	return actual.(*dynamostore.Store)
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func (b *dynamoBackend) store() idem.Store { return b.s }

func (b *dynamoBackend) key(skey string) map[string]types.AttributeValue {
	if b.composite {
		return map[string]types.AttributeValue{compositePK: str(compositeVal), compositeSK: str(skey)}
	}
	return map[string]types.AttributeValue{b.names.PartitionKey: str(skey)}
}

// skeyOf is the storage key a request's Key addresses.
func (b *dynamoBackend) skeyOf(key map[string]types.AttributeValue) string {
	attr := b.names.PartitionKey
	if b.composite {
		attr = compositeSK
	}
	if s, ok := key[attr].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

func (b *dynamoBackend) record(skey string) (idem.Record, bool) {
	item, ok := b.srv.Get(receiptsTable, b.key(skey))
	if !ok {
		return idem.Record{}, false
	}
	n := b.names
	s := func(a string) string {
		v, _ := item[a].(*types.AttributeValueMemberS)
		if v == nil {
			return ""
		}
		return v.Value
	}
	num := func(a string) int64 {
		v, _ := item[a].(*types.AttributeValueMemberN)
		if v == nil {
			return 0
		}
		i, _ := strconv.ParseInt(v.Value, 10, 64)
		return i
	}
	ms := func(a string) time.Time {
		if i := num(a); i != 0 {
			return time.UnixMilli(i)
		}
		return time.Time{}
	}
	rec := idem.Record{Key: skey, Status: idem.Status(s(n.Status)), Lease: s(n.Lease), LeaseUntil: ms(n.LeaseUntil),
		Attempts: int(num(n.Attempts)), Fingerprint: s(n.Fingerprint), UpdatedAt: ms(n.UpdatedAt), LastError: s(n.LastError)}
	if e := num(n.TTL); e != 0 {
		rec.ExpiresAt = time.Unix(e, 0)
	}
	if r, ok := item[n.Result].(*types.AttributeValueMemberB); ok {
		rec.Result = r.Value
	}
	if o, ok := item[n.NoResult].(*types.AttributeValueMemberBOOL); ok {
		rec.ResultOmitted = o.Value
	}
	return rec, true
}

// expire is DynamoDB's TTL: it deletes items some time after their
// expiresAt (by the service's clock: the bubble's).
func (b *dynamoBackend) expire(now time.Time) {
	for _, item := range b.srv.Items(receiptsTable) {
		e, _ := item[b.names.TTL].(*types.AttributeValueMemberN)
		if e == nil {
			continue
		}
		if at, _ := strconv.ParseInt(e.Value, 10, 64); at < now.Unix() {
			in := &dynamodb.DeleteItemInput{TableName: aws.String(receiptsTable), Key: b.key(b.skeyOf(item))}
			out, err := b.srv.DeleteItem(context.Background(), in)
			b.w.note(WireCall{DynamoDB: &ddbmodel.Call{Op: "DeleteItem", Input: in, Output: out, Err: err}})
			b.w.logf("ttl", "deletes %s (expired %s)", short(b.skeyOf(item)), b.w.at(time.Unix(at, 0)))
		}
	}
}

func (b *dynamoBackend) ledger(key string) int {
	item, ok := b.srv.Get(ledgerTable, map[string]types.AttributeValue{"k": str(key)})
	if !ok {
		return 0
	}
	n, _ := item["n"].(*types.AttributeValueMemberN)
	if n == nil {
		return 0
	}
	i, _ := strconv.Atoi(n.Value)
	return i
}

// ledgerWrites is the transactional effect of key: ADD n 1 on its ledger
// item; a poison key's transaction also checks a condition that never
// holds.
func (b *dynamoBackend) ledgerWrites(key string, poison bool) []any {
	writes := []any{types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(ledgerTable),
		Key:                       map[string]types.AttributeValue{"k": str(key)},
		UpdateExpression:          aws.String("ADD #n :one"),
		ExpressionAttributeNames:  map[string]string{"#n": "n"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
	}}}
	if poison {
		writes = append(writes, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
			TableName:                aws.String(ledgerTable),
			Key:                      map[string]types.AttributeValue{"k": str("gate")},
			ConditionExpression:      aws.String("attribute_exists(#open)"),
			ExpressionAttributeNames: map[string]string{"#open": "open"},
		}})
	}
	return writes
}

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// dynamoWire is the dynamostore.API of the processes: each request goes
// through the scheduler to the model of the schedule its context belongs
// to.
type dynamoWire struct{}

var _ dynamostore.API = dynamoWire{}

func backendOf(ctx context.Context) *dynamoBackend {
	return procOf(ctx).w.store.(*dynamoBackend)
}

// refused is how DynamoDB refuses a request it did not apply.
func refused(op string) func(fault) error {
	return func(f fault) error {
		var err error = &types.InternalServerError{Message: aws.String("sim: refused")}
		if f == faultThrottle {
			err = &types.ThrottlingException{Message: aws.String("sim: throttled")}
		}
		return &smithy.OperationError{ServiceID: "DynamoDB", OperationName: op, Err: err}
	}
}

// lostReply is what the client sees of a request applied whose reply was
// lost: a 500, as a proxy answers after forwarding.
func lostReply(op string) error {
	return &smithy.OperationError{ServiceID: "DynamoDB", OperationName: op, Err: &types.InternalServerError{Message: aws.String("sim: reply lost")}}
}

func (dynamoWire) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	b := backendOf(ctx)
	return send(b, ctx, "UpdateItem", b.skeyOf(in.Key), in, func() (*dynamodb.UpdateItemOutput, error) { return b.srv.UpdateItem(ctx, in) })
}

func (dynamoWire) GetItem(ctx context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	b := backendOf(ctx)
	return send(b, ctx, "GetItem", b.skeyOf(in.Key), in, func() (*dynamodb.GetItemOutput, error) { return b.srv.GetItem(ctx, in) })
}

func (dynamoWire) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	b := backendOf(ctx)
	skey := ""
	if len(in.TransactItems) > 0 && in.TransactItems[0].Update != nil {
		skey = b.skeyOf(in.TransactItems[0].Update.Key)
	}
	actor := b.w.actorOf(ctx)
	token := b.w.check.token(actor) // the commit's, also when it lands late
	if b.tokens && in.ClientRequestToken == nil {
		// As the SDK does: it fills the idempotency token into the input
		// it is given, and dynamostore sends that input again on a retry,
		// so a retried commit that landed is answered with success.
		in.ClientRequestToken = aws.String(b.w.check.ghostName("token:" + actor))
	}
	return send(b, ctx, "TransactWriteItems", skey, in, func() (*dynamodb.TransactWriteItemsOutput, error) {
		keys := b.ledgerKeys(in)
		before := b.ledgers(keys)
		out, err := b.srv.TransactWriteItems(ctx, in)
		// A success may apply nothing: a retry of a request that landed,
		// answered by its token. The ledger says what was applied.
		for i, n := range b.ledgers(keys) {
			if n > before[i] {
				b.w.check.txApplied(actor, token, keys[i])
			}
		}
		return out, err
	})
}

// send is one request of a process to the model, through the scheduler,
// recorded when the schedule is.
func send[O any](b *dynamoBackend, ctx context.Context, op, skey string, in any, apply func() (*O, error)) (*O, error) {
	var (
		out *O
		err error
		i   = -1
	)
	lost := lostReply(op)
	ferr := b.w.request(ctx, skey, func() {
		out, err = apply()
		var o any
		if err == nil && out != nil {
			o = out
		}
		i = b.w.note(WireCall{DynamoDB: &ddbmodel.Call{Op: op, Input: in, Output: o, Err: err}})
	}, func(f fault) error {
		e := refused(op)(f)
		b.w.note(WireCall{Fault: f, DynamoDB: &ddbmodel.Call{Op: op, Input: in, Err: e}})
		return e
	}, lost)
	if ferr != nil {
		if ferr == lost {
			b.w.markLost(i)
		}
		return nil, ferr
	}
	return out, err
}

// ledgerKeys are the keys whose ledger items a transaction updates.
func (b *dynamoBackend) ledgerKeys(in *dynamodb.TransactWriteItemsInput) []string {
	var keys []string
	for _, it := range in.TransactItems {
		if u := it.Update; u != nil && aws.ToString(u.TableName) == ledgerTable {
			if k, ok := u.Key["k"].(*types.AttributeValueMemberS); ok {
				keys = append(keys, k.Value)
			}
		}
	}
	return keys
}

func (b *dynamoBackend) ledgers(keys []string) []int {
	n := make([]int, len(keys))
	for i, k := range keys {
		n[i] = b.ledger(k)
	}
	return n
}

// held lists the HELD records of the table.
func (b *dynamoBackend) held() []string {
	var out []string
	for _, item := range b.srv.Items(receiptsTable) {
		if s, ok := item[b.names.Status].(*types.AttributeValueMemberS); ok && s.Value == string(idem.StatusHeld) {
			out = append(out, b.skeyOf(item))
		}
	}
	return out
}
