package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/pkg/idem"
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

// Backoff of Complete's retries on transient errors. Full jitter, so that
// the consumers of one throttled table do not retry in lockstep.
const (
	retryBase = 50 * time.Millisecond
	retryCap  = 2 * time.Second
	// completeTimeout bounds Complete's retries when ctx has no deadline
	// (the Guard always gives one: the Lambda's).
	completeTimeout = 30 * time.Second
)

// Store is an idem.Store and idem.TxStore on one DynamoDB table. It is safe
// for concurrent use; create one per table and share it.
type Store struct {
	client API
	table  string
	names  Names

	// backoff returns the wait before retry n (0-based); tests shorten it.
	backoff func(n int) time.Duration
}

// Option configures a Store.
type Option func(*Store) error

// WithSchema sets the attribute names. Default DefaultSchema, which is what
// the stack in infra/ creates.
func WithSchema(n Names) Option {
	return func(s *Store) error {
		seen := make(map[string]string)
		for _, f := range []struct{ field, value string }{
			{"PartitionKey", n.PartitionKey}, {"TTL", n.TTL}, {"Status", n.Status},
			{"Lease", n.Lease}, {"LeaseUntil", n.LeaseUntil}, {"Attempts", n.Attempts},
			{"Fingerprint", n.Fingerprint}, {"Result", n.Result}, {"NoResult", n.NoResult},
			{"UpdatedAt", n.UpdatedAt}, {"LastError", n.LastError},
		} {
			if f.value == "" {
				return fmt.Errorf("%w: dynamostore: schema: empty %s", idem.ErrInvalid, f.field)
			}
			if other, ok := seen[f.value]; ok {
				return fmt.Errorf("%w: dynamostore: schema: %s and %s are both %q", idem.ErrInvalid, other, f.field, f.value)
			}
			seen[f.value] = f.field
		}
		s.names = n
		return nil
	}
}

// New returns a Store on table, whose partition key is a string attribute
// named as in the schema ("pk" by default) and whose TTL attribute is
// expiresAt. The SDK client's own retries apply to every call.
func New(client API, table string, opts ...Option) (*Store, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: dynamostore: nil client", idem.ErrInvalid)
	}
	if table == "" {
		return nil, fmt.Errorf("%w: dynamostore: empty table name", idem.ErrInvalid)
	}
	s := &Store{client: client, table: table, names: DefaultSchema, backoff: jitter}
	for _, opt := range opts {
		if err := opt(s); err != nil {
			return nil, err
		}
	}
	return s, nil
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

// acquire makes one attempt; again reports that the record in the way could
// not be read back (deleted, or taken and released in between).
func (s *Store) acquire(ctx context.Context, a idem.Acquisition) (rec idem.Record, acquired, again bool, err error) {
	n := s.names
	upd := expression.
		Set(name(n.Status), expression.Value(string(idem.StatusInProgress))).
		Set(name(n.Lease), expression.Value(a.Lease)).
		Set(name(n.LeaseUntil), expression.Value(millis(a.LeaseUntil))).
		Set(name(n.TTL), expression.Value(seconds(a.ExpiresAt))).
		Set(name(n.UpdatedAt), expression.Value(millis(a.Now))).
		Add(name(n.Attempts), expression.Value(1)).
		Remove(name(n.LastError))
	upd = setOrRemove(upd, n.Fingerprint, a.Fingerprint)
	upd = s.setResult(upd, nil, false)
	expr, err := expression.NewBuilder().WithCondition(s.takeable(a.Now)).WithUpdate(upd).Build()
	if err != nil {
		return idem.Record{}, false, false, fmt.Errorf("dynamostore: acquire %q: build expression: %w", a.Key, err)
	}
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 s.key(a.Key),
		UpdateExpression:                    expr.Update(),
		ConditionExpression:                 expr.Condition(),
		ExpressionAttributeNames:            expr.Names(),
		ExpressionAttributeValues:           expr.Values(),
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		rec, err := s.decode(out.Attributes)
		if err != nil {
			return idem.Record{}, false, false, err
		}
		return rec, true, false, nil
	}

	var ccf *types.ConditionalCheckFailedException
	var conflict *types.TransactionConflictException
	switch {
	case errors.As(err, &ccf):
		rec, found, err := s.inTheWay(ctx, a.Key, ccf.Item, a.Now)
		return rec, false, !found && err == nil, err
	case errors.As(err, &conflict):
		// A transactional commit of the same key is under way.
		return idem.Record{}, false, false, fmt.Errorf("dynamostore: acquire %q: %w: %w", a.Key, idem.ErrInProgress, err)
	default:
		return idem.Record{}, false, false, fmt.Errorf("dynamostore: acquire %q: %w", a.Key, err)
	}
}

// inTheWay returns the record that failed a takeable condition evaluated at
// now: item (ALL_OLD) when DynamoDB returned it, else a consistent read.
// found is false when the record we read would pass the condition after all
// (deleted, expired, released or given up since): the caller should retry.
func (s *Store) inTheWay(ctx context.Context, key string, item map[string]types.AttributeValue, now time.Time) (rec idem.Record, found bool, err error) {
	if len(item) == 0 {
		out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:      aws.String(s.table),
			Key:            s.key(key),
			ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			return idem.Record{}, false, fmt.Errorf("dynamostore: read %q after conflict: %w", key, err)
		}
		if out.Item == nil {
			return idem.Record{}, false, nil
		}
		item = out.Item
	}
	rec, err = s.decode(item)
	if err != nil {
		return idem.Record{}, false, err
	}
	if isTakeable(rec, now) {
		return rec, false, nil
	}
	return rec, true, nil
}

// Complete implements idem.Store. The write is fenced by the lease: only the
// attempt that holds the record can complete it. Transient errors are
// retried until ctx's deadline, because a receipt we fail to write is the
// window in which the effect can run twice. Retrying is safe: a write that
// landed but whose response was lost still holds our lease and is rewritten
// with the same values.
func (s *Store) Complete(ctx context.Context, key, lease string, c idem.Completion) error {
	n := s.names
	upd := expression.
		Set(name(n.Status), expression.Value(string(idem.StatusCompleted))).
		Set(name(n.TTL), expression.Value(seconds(c.ExpiresAt))).
		Set(name(n.UpdatedAt), expression.Value(millis(c.Now))).
		Remove(name(n.LastError))
	upd = s.setResult(upd, c.Result, c.ResultOmitted)
	in, err := s.fenced(key, lease, upd)
	if err != nil {
		return fmt.Errorf("dynamostore: complete %q: %w", key, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, completeTimeout)
		defer cancel()
	}
	for attempt := 0; ; attempt++ {
		_, err := s.client.UpdateItem(ctx, in)
		if err == nil {
			return nil
		}
		if lost := leaseLost(err); lost != nil {
			return fmt.Errorf("dynamostore: complete %q: %w", key, lost)
		}
		if !transient(err) {
			return fmt.Errorf("dynamostore: complete %q: %w", key, err)
		}
		t := time.NewTimer(s.backoff(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("dynamostore: complete %q: gave up after %d attempts: %w", key, attempt+1, errors.Join(err, ctx.Err()))
		case <-t.C:
		}
	}
}

// Release implements idem.Store, fenced like Complete. It is not retried
// beyond the SDK's own retries: a lost release only delays the next attempt
// until the lease ends.
func (s *Store) Release(ctx context.Context, key, lease, reason string, now time.Time) error {
	n := s.names
	upd := expression.
		Set(name(n.Status), expression.Value(string(idem.StatusFailed))).
		Set(name(n.UpdatedAt), expression.Value(millis(now)))
	upd = setOrRemove(upd, n.LastError, reason)
	in, err := s.fenced(key, lease, upd)
	if err != nil {
		return fmt.Errorf("dynamostore: release %q: %w", key, err)
	}
	if _, err := s.client.UpdateItem(ctx, in); err != nil {
		if lost := leaseLost(err); lost != nil {
			return fmt.Errorf("dynamostore: release %q: %w", key, lost)
		}
		return fmt.Errorf("dynamostore: release %q: %w", key, err)
	}
	return nil
}

// fenced builds an UpdateItem of key that only succeeds while lease holds it.
// The lease stays on the item after Complete and Release, for operators.
func (s *Store) fenced(key, lease string, upd expression.UpdateBuilder) (*dynamodb.UpdateItemInput, error) {
	cond := expression.And(
		name(s.names.PartitionKey).AttributeExists(),
		name(s.names.Lease).Equal(expression.Value(lease)),
	)
	expr, err := expression.NewBuilder().WithCondition(cond).WithUpdate(upd).Build()
	if err != nil {
		return nil, fmt.Errorf("build expression: %w", err)
	}
	return &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       s.key(key),
		UpdateExpression:          expr.Update(),
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
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

// transient reports whether err is worth retrying after the SDK gave up:
// throttling, DynamoDB's 5xx, a transaction on the same item, and whatever
// the SDK's standard retryer classifies as retryable (connection errors,
// timeouts of one HTTP attempt, 5xx status codes, throttling codes). A done
// context is never transient: that is the caller's deadline.
func transient(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var (
		throughput *types.ProvisionedThroughputExceededException
		limit      *types.RequestLimitExceeded
		internal   *types.InternalServerError
		throttling *types.ThrottlingException
		conflict   *types.TransactionConflictException
	)
	switch {
	case errors.As(err, &throughput), errors.As(err, &limit), errors.As(err, &internal),
		errors.As(err, &throttling), errors.As(err, &conflict):
		return true
	}
	return retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary ||
		retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err) == aws.TrueTernary
}

// jitter is capped exponential backoff with full jitter.
func jitter(n int) time.Duration {
	d := retryCap
	if n < 16 {
		d = min(retryCap, retryBase<<n)
	}
	return rand.N(d) + time.Millisecond
}

// Get returns the record stored under key (a storage key, see
// idem.Guard.StorageKey) with a consistent read, expired or not. It is for
// operators and tests; the Guard never reads.
func (s *Store) Get(ctx context.Context, key string) (idem.Record, bool, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            s.key(key),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return idem.Record{}, false, fmt.Errorf("dynamostore: get %q: %w", key, err)
	}
	if len(out.Item) == 0 {
		return idem.Record{}, false, nil
	}
	rec, err := s.decode(out.Item)
	return rec, err == nil, err
}
