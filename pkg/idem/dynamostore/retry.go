package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// The Store retries on its own, with short, jittered, bounded backoff, and
// turns the SDK's retries off for its requests. The SDK's standard retryer
// has a retry quota shared by the whole client: a burst of throttling
// empties it, and then it stops retrying at all, just when a receipt most
// needs to land. The Store's retries know what each request is for: a
// receipt is retried until the lease ends, the rest a few times.
const (
	retryBase = 25 * time.Millisecond
	retryCap  = 400 * time.Millisecond
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
	for attempt := 0; ; attempt++ {
		err := op(ctx)
		if err == nil || !transient(err) {
			return err
		}
		if tries > 0 && attempt+1 >= tries {
			return fmt.Errorf("gave up after %d attempts: %w", attempt+1, err)
		}
		t := time.NewTimer(s.backoff(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("gave up after %d attempts: %w", attempt+1, errors.Join(err, ctx.Err()))
		case <-t.C:
		}
	}
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

// jitter is capped exponential backoff with full jitter, so that the
// consumers of one throttled table do not retry in lockstep.
func jitter(n int) time.Duration {
	d := retryCap
	if n < 16 {
		d = min(retryCap, retryBase<<n)
	}
	return rand.N(d) + time.Millisecond
}
