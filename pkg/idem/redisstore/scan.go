package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// scanCount is SCAN's COUNT: about how many keys the server looks at per
// call. Each call is short, so the server, single-threaded, never blocks
// its other clients for long (KEYS would, for the whole keyspace).
const scanCount = 1000

// node is what Scan needs of a server's client: SCAN, and a pipeline to
// read a page of records in one round trip. *redis.Client has both.
type node interface {
	ScanType(ctx context.Context, cursor uint64, match string, count int64, keyType string) *redis.ScanCmd
	Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
}

var _ node = (*redis.Client)(nil)

// Scan calls fn for every record of namespace, expired or not (as long as
// Redis has not evicted it), in no order, for operators (idemctl list): it
// walks the keyspace with SCAN ... MATCH <prefix><namespace>#* TYPE hash,
// never KEYS, and reads each page of keys with one pipeline of HGETALLs.
// fn is called from one goroutine at a time; an error of fn stops the
// scan and is returned.
//
// SCAN reports every key present for the whole walk, and may report one
// more than once: Scan reports it once (it keeps the keys it reported, a
// few dozen bytes each). A record written or deleted during the walk may
// or may not be reported.
//
// With a *redis.ClusterClient, Scan walks every master the client knows,
// at once, each with its own SCAN (a cluster's SCAN sees one node's keys
// only); a key that moves between masters during a resharding may be
// missed, and is read through the cluster client if its master answers
// that it moved. Replicas are not read. A *redis.Client (a single node, or
// Sentinel's failover client) is walked on its master. Another Client is
// refused with idem.ErrInvalid.
func (s *Store) Scan(ctx context.Context, namespace string, fn func(idem.Record) error) error {
	if namespace == "" || strings.Contains(namespace, idem.KeySeparator) {
		return fmt.Errorf("%w: redisstore: scan: namespace %q is empty or holds %q", idem.ErrInvalid, namespace, idem.KeySeparator)
	}
	w := &walk{s: s, match: globEscape(s.prefix+namespace+idem.KeySeparator) + "*", fn: fn, seen: map[string]struct{}{}}
	var err error
	switch c := s.client.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return w.node(ctx, n) })
	case node:
		err = w.node(ctx, c)
	default:
		return fmt.Errorf("%w: redisstore: scan: a %T cannot SCAN: use a *redis.Client or a *redis.ClusterClient", idem.ErrInvalid, s.client)
	}
	if err != nil && !errors.Is(err, errStopped) {
		return fmt.Errorf("redisstore: scan %q: %w", namespace, classify(err))
	}
	return w.fnErr
}

// walk is one Scan: its pattern, and what it reported, shared by the
// walks of a cluster's masters.
type walk struct {
	s     *Store
	match string
	fn    func(idem.Record) error

	mu    sync.Mutex
	seen  map[string]struct{}
	fnErr error
}

// errStopped stops the other masters' walks once fn failed.
var errStopped = errors.New("scan stopped")

// node walks one server's keys.
func (w *walk) node(ctx context.Context, n node) error {
	var cursor uint64
	for {
		var keys []string
		err := w.s.retry(ctx, acquireTries, func(ctx context.Context) error {
			var err error
			keys, cursor, err = n.ScanType(ctx, cursor, w.match, scanCount, "hash").Result()
			return err
		})
		if err != nil {
			return err
		}
		if err := w.page(ctx, n, keys); err != nil {
			return err
		}
		if cursor == 0 {
			return nil
		}
	}
}

// page reads the records under keys, in one pipeline, and reports them.
func (w *walk) page(ctx context.Context, n node, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	var cmds []*redis.MapStringStringCmd
	err := w.s.retry(ctx, acquireTries, func(ctx context.Context) error {
		cmds = cmds[:0]
		_, err := n.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range keys {
				cmds = append(cmds, p.HGetAll(ctx, k))
			}
			return nil
		})
		if err != nil && movedOnly(cmds) {
			return nil // read those through the cluster client below
		}
		return err
	})
	if err != nil {
		return err
	}
	for i, k := range keys {
		skey := strings.TrimPrefix(k, w.s.prefix)
		fields, err := cmds[i].Result()
		var rec idem.Record
		switch {
		case redis.HasErrorPrefix(err, "MOVED"), redis.HasErrorPrefix(err, "ASK"):
			var found bool
			if rec, found, err = w.s.Get(ctx, skey); err != nil {
				return err
			} else if !found {
				continue
			}
		case err != nil:
			return err
		default:
			flat := make([]any, 0, 2*len(fields))
			for f, v := range fields {
				flat = append(flat, f, v)
			}
			if rec, err = decode(skey, flat); err != nil {
				return fmt.Errorf("%q: %w", k, err)
			}
		}
		if rec.Status == "" {
			continue // deleted or evicted since SCAN saw it
		}
		if err := w.report(rec); err != nil {
			return err
		}
	}
	return nil
}

// report calls fn once per key, one call at a time.
func (w *walk) report(rec idem.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fnErr != nil {
		return errStopped
	}
	if _, dup := w.seen[rec.Key]; dup {
		return nil
	}
	w.seen[rec.Key] = struct{}{}
	if err := w.fn(rec); err != nil {
		w.fnErr = err
		return errStopped
	}
	return nil
}

// movedOnly reports whether every failed command of a pipeline failed
// because its key is on another master now (a resharding).
func movedOnly(cmds []*redis.MapStringStringCmd) bool {
	for _, c := range cmds {
		if err := c.Err(); err != nil && !redis.HasErrorPrefix(err, "MOVED") && !redis.HasErrorPrefix(err, "ASK") {
			return false
		}
	}
	return true
}

// globEscape quotes the characters SCAN's MATCH reads as a pattern, so
// that a prefix or a namespace holding them matches only itself.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\^-`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
