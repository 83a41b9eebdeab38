package redisstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/internal/retry"
)

// Client is the part of a go-redis client the Store uses: running Lua
// scripts. *redis.Client (Sentinel's failover client included),
// *redis.ClusterClient and redis.UniversalClient implement it; tests pass a
// fake. *redis.Ring implements it too, but New refuses it: see the package
// documentation. WithWaitReplicas needs more than Eval and EvalSha: a
// *redis.Client or a *redis.ClusterClient itself.
type Client interface {
	Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd
	EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd
}

var (
	_ Client     = (*redis.Client)(nil)
	_ Client     = (*redis.ClusterClient)(nil)
	_ Client     = (*redis.Ring)(nil)
	_ Client     = redis.UniversalClient(nil)
	_ idem.Store = (*Store)(nil)
)

const (
	// DefaultPrefix is put before every storage key to make the record's
	// Redis key, so that the records stand apart from other data in the
	// same database.
	DefaultPrefix = "idem:"
	// DefaultMaxResultSize is the largest result a record keeps by default.
	// A Guard's own default (idem.DefaultMaxResultSize) is lower; raise both
	// with WithMaxResultSize here and idem.WithMaxResultSize there.
	DefaultMaxResultSize = 1 << 20
	// MaxResultSizeLimit is the most WithMaxResultSize accepts. Redis takes
	// strings of up to 512 MB, but every acquire of a duplicate sends its
	// result back, and the server, single-threaded, copies it while every
	// other client waits.
	MaxResultSizeLimit = 64 << 20
)

// Store is an idem.Store on Redis OSS or Valkey, one hash per record. It is
// safe for concurrent use; create one per client and share it.
type Store struct {
	client    Client
	prefix    string
	maxResult int
	wait      *waitReplicas             // nil without WithWaitReplicas
	backoff   func(n int) time.Duration // wait before retry n (0-based); tests shorten it
}

// Option configures a Store.
type Option func(*Store) error

// WithPrefix sets what is put before every storage key to make the record's
// Redis key. Default DefaultPrefix. It may be empty.
func WithPrefix(prefix string) Option {
	return func(s *Store) error {
		s.prefix = prefix
		return nil
	}
}

// WithMaxResultSize sets the largest result a record keeps, in bytes, which
// the Store declares in its Capabilities: a Guard cannot be given a larger
// cap, and Complete refuses a larger result with idem.ErrResultTooLarge.
// Default DefaultMaxResultSize; at most MaxResultSizeLimit.
func WithMaxResultSize(n int) Option {
	return func(s *Store) error {
		if n <= 0 || n > MaxResultSizeLimit {
			return fmt.Errorf("%w: redisstore: max result size %d is not in (0, %d]", idem.ErrInvalid, n, MaxResultSizeLimit)
		}
		s.maxResult = n
		return nil
	}
}

// New returns a Store using client. The Store makes its own retries of
// transient errors on top of the client's (see the package documentation).
func New(client Client, opts ...Option) (*Store, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: redisstore: nil client", idem.ErrInvalid)
	}
	if _, ok := client.(*redis.Ring); ok {
		return nil, fmt.Errorf("%w: redisstore: a *redis.Ring moves the keys of a shard that stops answering to the others, "+
			"so a receipt that is only out of reach reads as absent and its effect runs again: "+
			"use a *redis.Client (redis.NewFailoverClient with Sentinel) or a *redis.ClusterClient", idem.ErrInvalid)
	}
	s := &Store{client: client, prefix: DefaultPrefix, maxResult: DefaultMaxResultSize, backoff: retry.Jitter}
	for _, opt := range opts {
		if err := opt(s); err != nil {
			return nil, err
		}
	}
	if s.wait != nil {
		if err := s.wait.connect(client); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Capabilities implements idem.Store: no transactions (Redis cannot commit
// an effect's writes in another system with a receipt), every storage key a
// Guard makes (a Redis key takes up to 512 MB), and results up to the
// configured cap.
func (s *Store) Capabilities() idem.Capabilities {
	return idem.Capabilities{Transactions: false, MaxResultSize: s.maxResult, MaxKeySize: idem.MaxStorageKeyLen}
}

// Key returns the Redis key of the record stored under key (a storage key,
// see idem.Guard.StorageKey): the prefix and the storage key.
func (s *Store) Key(key string) string { return s.prefix + key }

// Acquire implements idem.Store with one script, one round trip: it takes
// the record, or returns the record in the way, lease and result included.
// With WithWaitReplicas, a lease taken (or found taken by this very
// acquisition) that too few replicas acknowledged is ErrNotReplicated, and
// the effect must not run.
func (s *Store) Acquire(ctx context.Context, a idem.Acquisition) (idem.Record, bool, error) {
	var reply any
	var acks int64
	err := s.retry(ctx, acquireTries, func(ctx context.Context) error {
		var err error
		reply, acks, err = s.write(ctx, acquireScript, s.Key(a.Key),
			millis(a.Now), a.Lease, millis(a.LeaseUntil), expiry(a.ExpiresAt), a.Fingerprint)
		return err
	})
	if err != nil {
		return idem.Record{}, false, fmt.Errorf("redisstore: acquire %q: %w", a.Key, classify(err))
	}
	rec, ok, err := acquired(a.Key, reply)
	if err != nil {
		return idem.Record{}, false, fmt.Errorf("redisstore: acquire %q: %w", a.Key, err)
	}
	if ok || (rec.Status == idem.StatusInProgress && rec.Lease == a.Lease) {
		if err := s.replicated(acks); err != nil {
			return idem.Record{}, false, fmt.Errorf("redisstore: acquire %q: %w", a.Key, err)
		}
	}
	return rec, ok, nil
}

// Complete implements idem.Store with one script, fenced by the lease: only
// the attempt that holds the record can complete it. Transient errors, and
// with WithWaitReplicas too few acknowledgements, are retried until ctx ends
// (the Guard's: the caller's deadline), because a receipt we fail to write
// is the window in which the effect can run twice.
//
// A result larger than the Store's cap is idem.ErrResultTooLarge, before any
// request.
func (s *Store) Complete(ctx context.Context, key, lease string, c idem.Completion) error {
	if len(c.Result) > s.maxResult {
		return fmt.Errorf("redisstore: complete %q: %d bytes, more than %d: %w", key, len(c.Result), s.maxResult, idem.ErrResultTooLarge)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, completeTimeout)
		defer cancel()
	}
	var reply any
	var short error // the last shortfall of replicas, kept when a WAIT that follows runs into ctx's end
	err := retry.Do(ctx, untilDeadline, receiptTransient, s.backoff, func(ctx context.Context) error {
		var acks int64
		var err error
		reply, acks, err = s.write(ctx, completeScript, s.Key(key),
			lease, expiry(c.ExpiresAt), millis(c.Now), c.Result, flag(c.ResultOmitted))
		if err == nil && reply == int64(1) {
			err = s.replicated(acks)
			short = cmp.Or(err, short)
		}
		return err
	})
	if short != nil && err != nil && !errors.Is(err, ErrNotReplicated) {
		err = errors.Join(err, short)
	}
	return fenced("complete", key, reply, err)
}

// Release implements idem.Store with one script, fenced like Complete, with
// a few retries of transient errors: a lost release only delays the next
// attempt until the lease ends. Too few acknowledgements (WithWaitReplicas)
// are not retried, for the same reason.
func (s *Store) Release(ctx context.Context, key, lease string, r idem.Released) error {
	var reply any
	err := s.retry(ctx, releaseTries, func(ctx context.Context) error {
		var acks int64
		var err error
		reply, acks, err = s.write(ctx, releaseScript, s.Key(key), lease, millis(r.Now), r.Reason, string(r.Status))
		if err == nil && reply == int64(1) {
			err = s.replicated(acks)
		}
		return err
	})
	return fenced("release", key, reply, err)
}

// fenced turns the reply of a fenced script into an error: 0 is
// idem.ErrLeaseLost.
func fenced(op, key string, reply any, err error) error {
	if err != nil {
		return fmt.Errorf("redisstore: %s %q: %w", op, key, classify(err))
	}
	switch reply {
	case int64(1):
		return nil
	case int64(0):
		return fmt.Errorf("redisstore: %s %q: %w", op, key, idem.ErrLeaseLost)
	}
	return fmt.Errorf("redisstore: %s %q: unexpected reply %v", op, key, reply)
}

// Get returns the record stored under key (a storage key, see
// idem.Guard.StorageKey), expired or not, as long as Redis has not evicted
// it. It is for operators and tests; the Guard never reads.
func (s *Store) Get(ctx context.Context, key string) (idem.Record, bool, error) {
	var reply any
	err := s.retry(ctx, acquireTries, func(ctx context.Context) error {
		var err error
		reply, err = s.eval(ctx, getScript, s.Key(key))
		return err
	})
	if err != nil {
		return idem.Record{}, false, fmt.Errorf("redisstore: get %q: %w", key, classify(err))
	}
	rec, err := decode(key, reply)
	if err != nil {
		return idem.Record{}, false, fmt.Errorf("redisstore: get %q: %w", key, err)
	}
	return rec, rec.Status != "", nil
}
