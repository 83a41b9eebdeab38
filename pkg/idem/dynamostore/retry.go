package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	stores "github.com/exactlyonce/sqsidem/pkg/idem/internal/retry"
)

// The Store retries on its own, with short, jittered, bounded backoff, and
// turns the SDK's retries off for its requests. The SDK's standard retryer
// has a retry quota shared by the whole client: a burst of throttling
// empties it, and then it stops retrying at all, just when a receipt most
// needs to land. The Store's retries know what each request is for: a
// receipt is retried until its context ends (the caller's deadline), the
// rest a few times.
const (
	// acquireTries bounds the attempts of an acquire, a commit and a read:
	// failing them early is safe (nothing ran), and the message comes back.
	acquireTries = 8
	// releaseTries bounds a release: a lost one only delays the next
	// attempt until the lease ends.
	releaseTries = 4
	// untilDeadline: retry until ctx ends.
	untilDeadline = 0
	// completeTimeout bounds Complete's retries when ctx has no deadline
	// (the Guard always gives one: the end of the lease).
	completeTimeout = 30 * time.Second
)

// noSDKRetries makes one request one HTTP attempt: the Store retries.
func noSDKRetries(o *dynamodb.Options) {
	o.Retryer = aws.NopRetryer{}
	o.RetryMaxAttempts = 1
}

// retry calls op until it succeeds, fails for good, ctx ends, or tries
// attempts were made (tries 0: until ctx ends).
func (s *Store) retry(ctx context.Context, tries int, op func(context.Context) error) error {
	return stores.Do(ctx, tries, transient, s.backoff, op)
}

// transient reports whether err is worth retrying: throttling, DynamoDB's
// 5xx, a transaction on the same item, and whatever the SDK's standard
// retryer classifies as retryable (connection errors, timeouts of one HTTP
// attempt, 5xx status codes, throttling codes). A done context is never
// transient: that is the caller's deadline.
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

// tooLarge reports whether err is DynamoDB refusing an item for its size.
func tooLarge(err error) bool {
	var api smithy.APIError
	return errors.As(err, &api) && api.ErrorCode() == "ValidationException" && tooLargeMessage(api.ErrorMessage())
}

// tooLargeMessage recognises DynamoDB's messages for an item over 400 KB:
// "Item size has exceeded the maximum allowed size", "Item size to update
// has exceeded the maximum allowed size".
func tooLargeMessage(msg string) bool {
	msg = strings.ToLower(msg)
	return strings.Contains(msg, "item size") && strings.Contains(msg, "exceeded")
}

// invalid wraps err with idem.ErrInvalid when DynamoDB, or the SDK before
// sending, refused the request as malformed (a transactional write of the
// effect's that DynamoDB cannot run, a key that does not match the table's
// schema): retrying cannot help, and it is the caller's mistake, not an
// outage of the store, so it must not fail whole batches as one would.
func invalid(err error) error {
	var (
		api    smithy.APIError
		params *smithy.InvalidParamsError
	)
	if errors.As(err, &params) || (errors.As(err, &api) && api.ErrorCode() == "ValidationException") {
		return fmt.Errorf("%w: %w", idem.ErrInvalid, err)
	}
	return err
}
