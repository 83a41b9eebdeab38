package main

import (
	"context"
	"fmt"
	"net/url"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/redisstore"
)

// redisStore is a Redis store of receipts: redisstore's Store reads,
// lists and resolves a record exactly as the library does.
type redisStore struct {
	*redisstore.Store
	namespace string
}

var _ records = (*redisStore)(nil)

// openRedis connects to the Redis of r.redisURL as the consumer's runtime
// does (IDEM_REDIS_URL: one node, redis.ParseURL) and checks that it
// answers. The client is closed when the run ends.
func (a *app) openRedis(ctx context.Context, r resources) (*receipts, error) {
	if a.partitionValue != "" {
		return nil, usagef("--partition-value is for a DynamoDB table with a sort key, not --redis-url")
	}
	opts, err := redis.ParseURL(r.redisURL)
	if err != nil {
		return nil, usagef("--redis-url (or %s): %v", envRedisURL, err)
	}
	opts.ContextTimeoutEnabled = true
	client := redis.NewClient(opts)
	a.onExit(client.Close)
	shown := redactURL(r.redisURL)
	if err := client.Ping(ctx).Err(); err != nil {
		return nil, fmt.Errorf("connect to Redis %s: %w", shown, err)
	}
	store, err := redisstore.New(client, redisstore.WithPrefix(a.redisPrefix))
	if err != nil {
		return nil, usagef("%v", err)
	}
	g, err := a.newGuard(store, r.namespace)
	if err != nil {
		return nil, err
	}
	return &receipts{records: &redisStore{Store: store, namespace: r.namespace}, namespace: r.namespace, guard: g,
		store: storeView{Redis: shown}, name: shown}, nil
}

// each lists the namespace with SCAN (redisstore.Store.Scan), never KEYS;
// the status is filtered here, since Redis cannot. segments is for
// DynamoDB only.
func (s *redisStore) each(ctx context.Context, status idem.Status, _ int, bar *progress, fn func(idem.Record)) error {
	bar.start(1)
	defer bar.finish()
	err := s.Scan(ctx, s.namespace, func(rec idem.Record) error {
		match := status == "" || rec.Status == status
		if match {
			fn(rec)
		}
		bar.add(1, int64(btoi(match)))
		return nil
	})
	bar.segmentDone()
	return err
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// redactURL is u without its password and its options, for output and
// errors.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	p.RawQuery, p.Fragment = "", ""
	return p.Redacted()
}
