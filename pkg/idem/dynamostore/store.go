package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	stores "github.com/exactlyonce/sqsidem/pkg/idem/internal/retry"
)

// API is the part of the DynamoDB client the store uses. *dynamodb.Client
// implements it; tests pass a fake.
type API interface {
	UpdateItem(ctx context.Context, params *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	GetItem(ctx context.Context, params *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	TransactWriteItems(ctx context.Context, params *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

var (
	_ API          = (*dynamodb.Client)(nil)
	_ idem.Store   = (*Store)(nil)
	_ idem.TxStore = (*Store)(nil)
)

// DynamoDB's limits that bound what a record can hold.
const (
	// maxItemBytes is DynamoDB's item size limit, 400 KB: the lengths of
	// the attribute names and values together.
	maxItemBytes = 400 << 10
	// maxValuesBytes bounds the record's values other than the result and
	// the key: status, two leases, fingerprint, four numbers, a boolean.
	maxValuesBytes = 512
	// MaxPartitionValueLen is the longest fixed partition value
	// WithCompositeKey takes.
	MaxPartitionValueLen = 1024
	// DynamoDB's key value limits: a partition key value is under 2048
	// bytes, a sort key value under 1024.
	maxPartitionKeyBytes = 2047
	maxSortKeyBytes      = 1023
)

// Store is an idem.Store and idem.TxStore on one DynamoDB table. It is safe
// for concurrent use; create one per table and share it.
type Store struct {
	client API
	table  string
	// tableName is table for the inputs, made once.
	tableName *string
	names     Names
	// sortKey and partitionValue are set by WithCompositeKey: records live
	// under (partitionValue, storage key) in a table with a sort key, whose
	// partition key is compositeKey (kept apart from names, so that
	// WithSchema after WithCompositeKey does not undo it).
	compositeKey, sortKey, partitionValue string

	exprs   exprCache
	backoff func(n int) time.Duration // wait before retry n (0-based); tests shorten it
}

// Option configures a Store.
type Option func(*Store) error

// WithSchema sets the attribute names. Default DefaultSchema, which is what
// the stack in infra/ creates.
func WithSchema(n Names) Option {
	return func(s *Store) error {
		s.names = n
		return nil
	}
}

// WithCompositeKey stores the records in a table whose key is a partition
// key and a sort key, such as an existing single-table design: every record
// goes under the partition key attribute partitionKey with the fixed value
// partitionValue (e.g. "IDEMPOTENCY"), and its storage key is the sort key
// attribute sortKey (type S). Powertools for AWS Lambda (TypeScript) calls
// these sortKeyAttr and staticPkValue.
func WithCompositeKey(partitionKey, sortKey, partitionValue string) Option {
	return func(s *Store) error {
		switch {
		case partitionKey == "" || sortKey == "":
			return fmt.Errorf("%w: dynamostore: composite key: empty attribute name", idem.ErrInvalid)
		case partitionValue == "":
			return fmt.Errorf("%w: dynamostore: composite key: empty partition value", idem.ErrInvalid)
		case len(partitionValue) > MaxPartitionValueLen:
			return fmt.Errorf("%w: dynamostore: composite key: partition value is %d bytes, more than %d", idem.ErrInvalid, len(partitionValue), MaxPartitionValueLen)
		}
		s.compositeKey, s.sortKey, s.partitionValue = partitionKey, sortKey, partitionValue
		return nil
	}
}

// New returns a Store on table, whose partition key is a string attribute
// named as in the schema ("pk" by default) and whose TTL attribute is
// expiresAt. The Store makes its own retries of throttling and transient
// errors (see the package documentation), so the client's retryer is not
// used for its requests.
func New(client API, table string, opts ...Option) (*Store, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: dynamostore: nil client", idem.ErrInvalid)
	}
	if err := validTable(table); err != nil {
		return nil, err
	}
	s := &Store{client: client, table: table, tableName: aws.String(table), names: DefaultSchema, backoff: stores.Jitter}
	for _, opt := range opts {
		if err := opt(s); err != nil {
			return nil, err
		}
	}
	if s.compositeKey != "" {
		s.names.PartitionKey = s.compositeKey
	}
	s.names = s.names.withDefaults()
	if err := s.names.validate(s.sortKey); err != nil {
		return nil, err
	}
	return s, nil
}

// Capabilities implements idem.Store: transactions; storage keys as long as
// a key attribute takes (a sort key is under 1024 bytes, so a composite key
// limits plain keys); and results as large as an item can hold next to the
// record's other attributes under the longest storage key.
func (s *Store) Capabilities() idem.Capabilities {
	maxKey := maxPartitionKeyBytes
	if s.sortKey != "" {
		maxKey = maxSortKeyBytes
	}
	maxKey = min(maxKey, idem.MaxStorageKeyLen)
	overhead := s.names.namesLen() + len(s.sortKey) + len(s.partitionValue) + maxKey + maxValuesBytes
	return idem.Capabilities{Transactions: true, MaxResultSize: maxItemBytes - overhead, MaxKeySize: maxKey}
}

// Acquire implements idem.Store with one conditional UpdateItem. On a
// conflict DynamoDB returns the record in the way (ALL_OLD), so the common
// duplicate costs one request too.
func (s *Store) Acquire(ctx context.Context, a idem.Acquisition) (idem.Record, bool, error) {
	rec, acquired, again, err := s.acquire(ctx, a)
	if again {
		// The record changed between our write and our read: try once more,
		// then let the caller retry later.
		rec, acquired, again, err = s.acquire(ctx, a)
		if again {
			return idem.Record{}, false, fmt.Errorf("dynamostore: acquire %q: record changing concurrently: %w", a.Key, idem.ErrInProgress)
		}
	}
	return rec, acquired, err
}

type acquireShape struct{ fingerprint bool }

// acquire makes one attempt (with retries of transient errors); again
// reports that the record in the way could not be read back (deleted, or
// taken and released in between).
func (s *Store) acquire(ctx context.Context, a idem.Acquisition) (rec idem.Record, acquired, again bool, err error) {
	shape := acquireShape{fingerprint: a.Fingerprint != ""}
	x, err := s.exprs.get(shape, func() expression.Builder { return s.acquireExpr(shape) })
	if err != nil {
		return idem.Record{}, false, false, fmt.Errorf("dynamostore: acquire %q: %w", a.Key, err)
	}
	now := num(millis(a.Now))
	vals, err := x.values(map[slot]types.AttributeValue{
		slotInProgress:  avInProgress,
		slotFailed:      avFailed,
		slotUnknown:     avUnknown,
		slotNone:        avNone,
		slotLease:       str(a.Lease),
		slotLeaseUntil:  num(millis(a.LeaseUntil)),
		slotExpiresAt:   num(seconds(a.ExpiresAt)),
		slotUpdatedAt:   now,
		slotNowSeconds:  num(seconds(a.Now)),
		slotNowMillis:   now,
		slotOne:         avOne,
		slotZero:        avZero,
		slotFingerprint: str(a.Fingerprint),
	})
	if err != nil {
		return idem.Record{}, false, false, fmt.Errorf("dynamostore: acquire %q: %w", a.Key, err)
	}
	in := &dynamodb.UpdateItemInput{
		TableName:                           s.tableName,
		Key:                                 s.key(a.Key),
		UpdateExpression:                    x.update,
		ConditionExpression:                 x.condition,
		ExpressionAttributeNames:            x.names,
		ExpressionAttributeValues:           vals,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	var (
		out *dynamodb.UpdateItemOutput
		ccf *types.ConditionalCheckFailedException
	)
	err = s.retry(ctx, acquireTries, func(ctx context.Context) error {
		var err error
		out, err = s.client.UpdateItem(ctx, in, noSDKRetries)
		if errors.As(err, &ccf) {
			// The record in the way: an answer, not an error. Returned as
			// one, every duplicate would pay for asking whether it is
			// worth retrying (the SDK's retryables format its message).
			return nil
		}
		return err
	})
	if err == nil && ccf == nil {
		rec, err := s.decode(out.Attributes)
		if err != nil {
			return idem.Record{}, false, false, err
		}
		return rec, true, false, nil
	}

	var conflict *types.TransactionConflictException
	switch {
	case ccf != nil:
		// A retried request whose first attempt landed finds its own record
		// here, lease included: the Guard recognises it.
		rec, found, err := s.inTheWay(ctx, a.Key, ccf.Item, a.Now)
		return rec, false, !found && err == nil, err
	case errors.As(err, &conflict):
		// A transactional commit of the same key is under way.
		return idem.Record{}, false, false, fmt.Errorf("dynamostore: acquire %q: %w: %w", a.Key, idem.ErrInProgress, err)
	default:
		return idem.Record{}, false, false, fmt.Errorf("dynamostore: acquire %q: %w", a.Key, invalid(err))
	}
}

// inTheWay returns the record that failed a takeable condition evaluated at
// now: item (ALL_OLD) when DynamoDB returned it, else a consistent read.
// found is false when the record we read would pass the condition after all
// (deleted, expired, released or given up since): the caller should retry.
func (s *Store) inTheWay(ctx context.Context, key string, item map[string]types.AttributeValue, now time.Time) (rec idem.Record, found bool, err error) {
	if len(item) == 0 {
		rec, found, err := s.get(ctx, key)
		if err != nil || !found {
			return idem.Record{}, false, err
		}
		return rec, !isTakeable(rec, now), nil
	}
	rec, err = s.decode(item)
	if err != nil {
		return idem.Record{}, false, err
	}
	return rec, !isTakeable(rec, now), nil
}

type completeShape struct{ result resultShape }

// Complete implements idem.Store. The write is fenced by the lease: only the
// attempt that holds the record can complete it. Transient errors are
// retried until ctx ends (the Guard ends it with the lease), because a
// receipt we fail to write is the window in which the effect can run twice.
// Retrying is safe: a write that landed but whose response was lost still
// holds our lease and is written again with the same values.
//
// A result DynamoDB refuses for its size (the item would pass 400 KB) is
// idem.ErrResultTooLarge, and nothing is written.
func (s *Store) Complete(ctx context.Context, key, lease string, c idem.Completion) error {
	shape := completeShape{result: resultShapeOf(c.Result, c.ResultOmitted)}
	x, err := s.exprs.get(shape, func() expression.Builder { return s.completeExpr(shape) })
	if err != nil {
		return fmt.Errorf("dynamostore: complete %q: %w", key, err)
	}
	vals := map[slot]types.AttributeValue{
		slotStatus:    avCompleted,
		slotLease:     str(lease),
		slotExpiresAt: num(seconds(c.ExpiresAt)),
		slotUpdatedAt: num(millis(c.Now)),
	}
	addResult(vals, c.Result, c.ResultOmitted)
	in, err := s.fenced(key, x, vals)
	if err != nil {
		return fmt.Errorf("dynamostore: complete %q: %w", key, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, completeTimeout)
		defer cancel()
	}
	err = s.retry(ctx, untilDeadline, func(ctx context.Context) error {
		_, err := s.client.UpdateItem(ctx, in, noSDKRetries)
		return err
	})
	switch {
	case err == nil:
		return nil
	case leaseLost(err) != nil:
		return fmt.Errorf("dynamostore: complete %q: %w", key, leaseLost(err))
	case len(c.Result) > 0 && tooLarge(err):
		return fmt.Errorf("dynamostore: complete %q: %w (%w)", key, idem.ErrResultTooLarge, err)
	}
	return fmt.Errorf("dynamostore: complete %q: %w", key, invalid(err))
}

type releaseShape struct{ reason, held bool }

// Release implements idem.Store, fenced like Complete, with a few retries
// of transient errors: a lost release only delays the next attempt until
// the lease ends.
//
// It writes the lease as the record's Released too, which the acquires
// that take the record after it keep. A FAILED record may be taken at
// once, so a release whose response was lost can be sent again after
// another attempt took the record it left: its fence then fails, DynamoDB
// returns the record (ALL_OLD), and a Released that is this lease makes the
// release the caller's own, done.
//
// A HELD record loses its TTL: nothing held is deleted silently.
func (s *Store) Release(ctx context.Context, key, lease string, r idem.Released) error {
	shape := releaseShape{reason: r.Reason != "", held: r.Status == idem.StatusHeld}
	x, err := s.exprs.get(shape, func() expression.Builder { return s.releaseExpr(shape) })
	if err != nil {
		return fmt.Errorf("dynamostore: release %q: %w", key, err)
	}
	in, err := s.fenced(key, x, map[slot]types.AttributeValue{
		slotStatus:    str(string(r.Status)),
		slotLease:     str(lease),
		slotUpdatedAt: num(millis(r.Now)),
		slotLastError: str(r.Reason),
	})
	if err != nil {
		return fmt.Errorf("dynamostore: release %q: %w", key, err)
	}
	in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	err = s.retry(ctx, releaseTries, func(ctx context.Context) error {
		_, err := s.client.UpdateItem(ctx, in, noSDKRetries)
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ccf) && s.releasedBy(ccf.Item, lease):
		return nil
	case leaseLost(err) != nil:
		return fmt.Errorf("dynamostore: release %q: %w", key, leaseLost(err))
	}
	return fmt.Errorf("dynamostore: release %q: %w", key, invalid(err))
}

// releasedBy reports whether lease's release landed on item before
// another attempt took it: the last release that landed, or the record the
// last acquire took over (released, then taken and released again).
func (s *Store) releasedBy(item map[string]types.AttributeValue, lease string) bool {
	released, ok := item[s.names.Released].(*types.AttributeValueMemberS)
	if ok && released.Value == lease {
		return true
	}
	prev, _ := item[s.names.PrevLease].(*types.AttributeValueMemberS)
	status, _ := item[s.names.PrevStatus].(*types.AttributeValueMemberS)
	return prev != nil && status != nil && prev.Value == lease &&
		(status.Value == string(idem.StatusFailed) || status.Value == string(idem.StatusUnknown))
}

// fenced is an UpdateItem of key with x, which only succeeds while the
// lease in vals holds the record. The lease stays on the item after
// Complete and Release, for operators and for retried requests.
func (s *Store) fenced(key string, x *expr, vals map[slot]types.AttributeValue) (*dynamodb.UpdateItemInput, error) {
	values, err := x.values(vals)
	if err != nil {
		return nil, err
	}
	return &dynamodb.UpdateItemInput{
		TableName:                 s.tableName,
		Key:                       s.key(key),
		UpdateExpression:          x.update,
		ConditionExpression:       x.condition,
		ExpressionAttributeNames:  x.names,
		ExpressionAttributeValues: values,
	}, nil
}

// leaseLost returns idem.ErrLeaseLost joined with err when err is a failed
// fencing condition, nil otherwise.
func leaseLost(err error) error {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return fmt.Errorf("%w (%w)", idem.ErrLeaseLost, err)
	}
	return nil
}

// Get returns the record stored under key (a storage key, see
// idem.Guard.StorageKey) with a consistent read, expired or not. It is for
// operators and tests; the Guard never reads.
func (s *Store) Get(ctx context.Context, key string) (idem.Record, bool, error) {
	rec, found, err := s.get(ctx, key)
	if err != nil {
		return idem.Record{}, false, fmt.Errorf("dynamostore: get %q: %w", key, err)
	}
	return rec, found, nil
}

func (s *Store) get(ctx context.Context, key string) (idem.Record, bool, error) {
	in := &dynamodb.GetItemInput{TableName: s.tableName, Key: s.key(key), ConsistentRead: aws.Bool(true)}
	var out *dynamodb.GetItemOutput
	err := s.retry(ctx, acquireTries, func(ctx context.Context) error {
		var err error
		out, err = s.client.GetItem(ctx, in, noSDKRetries)
		return err
	})
	if err != nil {
		return idem.Record{}, false, fmt.Errorf("read %q: %w", key, err)
	}
	if len(out.Item) == 0 {
		return idem.Record{}, false, nil
	}
	rec, err := s.decode(out.Item)
	return rec, err == nil, err
}
