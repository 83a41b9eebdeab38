package redisstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/internal/retry"
)

// go-redis retries a command itself (Options.MaxRetries, 3 by default) on
// network errors and on LOADING, TRYAGAIN, CLUSTERDOWN and the like. The
// Store retries on top of that, as dynamostore does, because it knows what
// each request is for: a receipt is retried until its context ends (the
// Guard's: the caller's deadline, past the lease, since the receipt is
// fenced), long after the client's few retries would have given up, since a
// receipt not written is the window in which the effect can run twice.
// Acquire and Release are retried a few times.
//
// Every retry is the same request, and the scripts make it idempotent: a
// write that landed but whose response was lost is found holding the
// caller's lease and is reported as the caller's own.
const (
	// acquireTries bounds the attempts of an acquire and a read: failing
	// them early is safe (nothing ran), and the message comes back.
	acquireTries = 4
	// releaseTries bounds a release: a lost one only delays the next
	// attempt until the lease ends.
	releaseTries = 4
	// untilDeadline: retry until ctx ends.
	untilDeadline = 0
	// completeTimeout bounds Complete's retries when ctx has no deadline
	// (the Guard always gives one).
	completeTimeout = 30 * time.Second
)

// retry calls op until it succeeds, fails for good, ctx ends, or tries
// attempts were made (tries 0: until ctx ends).
func (s *Store) retry(ctx context.Context, tries int, op func(context.Context) error) error {
	return retry.Do(ctx, tries, transient, s.backoff, op)
}

// transient reports whether err is worth retrying: the server is loading,
// failing over or busy with a slow script, a cluster slot is moving, or the
// connection failed or timed out. A done context is never transient (that is
// the caller's deadline), nor is a closed client, nor a server error that
// would answer the same again (OOM, WRONGTYPE, a script error).
//
// MOVED and ASK reach the Store only from the master it pipelines a WAIT to
// (WithWaitReplicas on a cluster; the cluster client follows them itself
// otherwise): the slot moved, and the retry finds its new master.
func transient(err error) bool {
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, redis.ErrClosed):
		return false
	case redis.IsLoadingError(err), redis.IsTryAgainError(err), redis.IsClusterDownError(err),
		redis.IsMasterDownError(err), redis.IsReadOnlyError(err), redis.IsMaxClientsError(err),
		redis.IsNoReplicasError(err), redis.HasErrorPrefix(err, "BUSY "),
		redis.HasErrorPrefix(err, "MOVED "), redis.HasErrorPrefix(err, "ASK "):
		return true
	}
	var redisErr redis.Error
	if errors.As(err, &redisErr) {
		return false
	}
	var netErr net.Error
	return errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, redis.ErrPoolTimeout)
}

// receiptTransient is transient for a receipt, which is also retried when
// too few replicas acknowledged it (WithWaitReplicas): each try writes it
// again and waits again, until a replica catches up or the context ends.
func receiptTransient(err error) bool {
	return transient(err) || errors.Is(err, ErrNotReplicated)
}

// classify adds what an error means to the caller: WRONGTYPE (the record's
// key holds another kind of value, the prefix collides with other data) is
// idem.ErrInvalid — a configuration mistake, not an outage that fails whole
// batches; a script the server cannot compile is a server older than Redis
// 7 (script shebangs), said in so many words.
func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case redis.HasErrorPrefix(err, "WRONGTYPE"):
		return fmt.Errorf("%w: %w (another value is stored under the record's key: choose another WithPrefix)", idem.ErrInvalid, err)
	case strings.Contains(err.Error(), "Error compiling script"):
		return fmt.Errorf("%w (redisstore needs Redis 7.0 or later, or Valkey: its scripts declare flags)", err)
	}
	return err
}
