package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// Redis replicates asynchronously: it acknowledges a write that no replica
// has yet, and a failover to a replica loses it. A lost lease lets a copy
// run the effect while the first attempt still runs it; a lost receipt lets
// a copy run it again. WAIT closes that: it blocks until n replicas have
// acknowledged every write its connection made, or its timeout passes.

// ErrNotReplicated is the error of a write that fewer replicas than
// WithWaitReplicas asks for acknowledged within its timeout. The write
// stands on the primary; it may be lost in a failover. The Guard reports
// an acquire that fails with it as StoreError (the effect does not run),
// and a receipt that still fails with it when its context ends as
// Unconfirmed.
var ErrNotReplicated = errors.New("redisstore: write not acknowledged by enough replicas")

// waitReplicas is the WAIT a Store sends after each write that matters.
type waitReplicas struct {
	n       int
	timeout time.Duration
	// conn is the client of the one node that holds key: WAIT must go
	// down the connection the script went down.
	conn func(ctx context.Context, key string) (*redis.Client, error)
	// moved is called when the node answered MOVED (a cluster slot moved,
	// a failover): the cluster client reloads its slot map, and the retry
	// asks conn again. Nil for a single primary.
	moved func(ctx context.Context)
}

// WithWaitReplicas makes every write that matters wait until n replicas
// have it, for at most timeout: an acquire that took the lease (before the
// effect runs), a receipt, a release. Fewer acknowledgements fail the
// request with ErrNotReplicated:
//
//   - An acquire fails and the effect does not run (the Guard reports
//     StoreError). The lease it wrote stays on the primary until its
//     leaseUntil, held by nobody: a copy finds it in progress until then,
//     and nobody can complete it (fencing).
//   - A receipt is retried until its context ends (the Guard's: the
//     caller's deadline), then the Guard reports Unconfirmed and owes it: a
//     possible loss is told, never silent.
//   - A release fails (joined to the effect's error); the next delivery may
//     wait for the lease to end.
//
// WAIT counts only the writes of its own connection, so the Store sends it
// in one pipeline with the script: New refuses this option (idem.ErrInvalid)
// for a client that cannot pipeline on one connection, which is anything but
// a *redis.Client (Sentinel's redis.NewFailoverClient returns one) and a
// *redis.ClusterClient (the pipeline goes to the master of the record's
// slot). The pipeline is read within the client's ReadTimeout, so timeout
// may be at most half of it. The WAIT goes with every acquire, a
// duplicate's too (the reply says only afterwards whether a lease was
// taken), so while replicas lag every request waits. n replicas must
// exist: with fewer connected, every acquire fails (Check says so).
//
// With n equal to the number of replicas, every replica Sentinel or the
// cluster can promote has every lease and receipt; with fewer, only the
// promoted replica with the greatest replication offset is sure to have
// them (see the package documentation, Deployments).
func WithWaitReplicas(n int, timeout time.Duration) Option {
	return func(s *Store) error {
		if n < 1 {
			return fmt.Errorf("%w: redisstore: WithWaitReplicas(%d): at least 1 replica", idem.ErrInvalid, n)
		}
		if timeout < time.Millisecond {
			// WAIT counts whole milliseconds, and 0 waits for ever.
			return fmt.Errorf("%w: redisstore: WithWaitReplicas timeout %s: at least 1ms", idem.ErrInvalid, timeout)
		}
		s.wait = &waitReplicas{n: n, timeout: timeout.Truncate(time.Millisecond)}
		return nil
	}
}

// connect sets how w reaches the connection of a key through client, or
// says why it cannot.
func (w *waitReplicas) connect(client Client) error {
	var readTimeout time.Duration
	switch c := client.(type) {
	case *redis.Client:
		readTimeout = c.Options().ReadTimeout
		w.conn = func(context.Context, string) (*redis.Client, error) { return c, nil }
	case *redis.ClusterClient:
		readTimeout = c.Options().ReadTimeout
		w.conn, w.moved = c.MasterForKey, c.ReloadState
	default:
		return fmt.Errorf("%w: redisstore: WithWaitReplicas needs a *redis.Client (redis.NewFailoverClient with Sentinel) "+
			"or a *redis.ClusterClient, which send a script and its WAIT down one connection; %T cannot", idem.ErrInvalid, client)
	}
	if readTimeout > 0 && 2*w.timeout > readTimeout {
		return fmt.Errorf("%w: redisstore: WithWaitReplicas timeout %s is more than half the client's ReadTimeout %s: "+
			"a lagging replica would fail writes as read timeouts", idem.ErrInvalid, w.timeout, readTimeout)
	}
	return nil
}

// write runs sc on key, a script that writes. With WithWaitReplicas it
// sends WAIT after it on the same connection and returns how many replicas
// acknowledged; without, acks is 0 and means nothing. Whether the write
// needed them is the caller's to say (see replicated): the script may have
// written nothing.
func (s *Store) write(ctx context.Context, sc script, key string, args ...any) (reply any, acks int64, err error) {
	w := s.wait
	if w == nil {
		reply, err = s.eval(ctx, sc, key, args...)
		return reply, 0, err
	}
	node, err := w.conn(ctx, key)
	if err != nil {
		return nil, 0, err
	}
	keys := []string{key}
	reply, acks, err = w.pipeline(ctx, node, func(p redis.Pipeliner) *redis.Cmd { return p.EvalSha(ctx, sc.sha, keys, args...) })
	if redis.HasErrorPrefix(err, "NOSCRIPT") {
		reply, acks, err = w.pipeline(ctx, node, func(p redis.Pipeliner) *redis.Cmd { return p.Eval(ctx, sc.src, keys, args...) })
	}
	if w.moved != nil && redis.HasErrorPrefix(err, "MOVED") {
		w.moved(ctx)
	}
	return reply, acks, err
}

// pipeline sends the script run makes and WAIT in one pipeline: go-redis
// writes and reads a pipeline on one connection, and retries it whole on
// another. A retried script that finds its own earlier write writes it
// again (see acquireLua), so that the WAIT on the new connection covers it.
func (w *waitReplicas) pipeline(ctx context.Context, node *redis.Client, run func(redis.Pipeliner) *redis.Cmd) (any, int64, error) {
	var sc *redis.Cmd
	var wait *redis.IntCmd
	_, _ = node.Pipelined(ctx, func(p redis.Pipeliner) error {
		sc = run(p)
		// Not in go-redis's Pipeliner interface, though its Client has it.
		wait = redis.NewIntCmd(ctx, "wait", w.n, w.timeout.Milliseconds())
		return p.Process(ctx, wait)
	})
	reply, err := sc.Result()
	if err != nil {
		return nil, 0, err
	}
	acks, err := wait.Result()
	return reply, acks, err
}

// replicated reports a write that matters (a lease taken, a receipt, a
// release) that fewer replicas than asked acknowledged, as
// ErrNotReplicated. Without WithWaitReplicas every write is replicated
// enough.
func (s *Store) replicated(acks int64) error {
	if s.wait == nil || acks >= int64(s.wait.n) {
		return nil
	}
	return fmt.Errorf("%w: %d of %d within %s", ErrNotReplicated, acks, s.wait.n, s.wait.timeout)
}
