package redisstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/redisstore"
)

// TestOptionCombinations: every combination of options New and idem.New
// accept works on a real server — an option that New takes and that then
// makes every request fail is a false error, as is a caller's mistake
// reported as a store outage.
func TestOptionCombinations(t *testing.T) {
	client := startServer(t)
	ctx := context.Background()
	stores := map[string][]redisstore.Option{
		"default":         nil,
		"empty prefix":    {redisstore.WithPrefix("")},
		"hash-tag prefix": {redisstore.WithPrefix("{receipts}:")},
		"small results":   {redisstore.WithMaxResultSize(1)},
		"backoff":         {redisstore.WithBackoff(func(int) time.Duration { return time.Millisecond })},
	}
	guards := map[string][]idem.Option{
		"default":          nil,
		"plain keys":       {idem.WithPlainKeys()},
		"cache":            {idem.WithCache(10)},
		"no results":       {idem.WithMaxResultSize(0)},
		"lease and margin": {idem.WithLease(5 * time.Second), idem.WithSafetyMargin(time.Second)},
		"short retention":  {idem.WithRetention(time.Second)},
		"error text":       {idem.WithErrorText(error.Error)},
	}
	for sn, sopts := range stores {
		store := newStore(t, client, sopts...)
		for gn, gopts := range guards {
			t.Run(sn+"/"+gn, func(t *testing.T) {
				g, err := idem.New(store, "options-"+strings.ReplaceAll(sn+"-"+gn, " ", "-"), gopts...)
				if err != nil {
					t.Fatalf("idem.New: %v", err)
				}
				expect := func(what string, res idem.Result, err error, want idem.Outcome) {
					t.Helper()
					if errors.Is(err, idem.ErrStore) || res.Outcome != want {
						t.Fatalf("%s: %v, %v; want %v", what, res.Outcome, err, want)
					}
				}
				value := func(context.Context) ([]byte, error) { return []byte("a result"), nil }
				res, err := g.Do(ctx, "k", []byte("p"), value)
				expect("new key", res, err, idem.Executed)
				res, err = g.Do(ctx, "k", []byte("p"), value)
				expect("duplicate", res, err, idem.Duplicate)
				res, err = g.Do(ctx, "f", nil, func(context.Context) ([]byte, error) { return nil, errors.New("declined: \xff") })
				expect("failed effect", res, err, idem.Failed)
				res, err = g.Do(ctx, "f", nil, value)
				expect("retry", res, err, idem.Rerun) // the failure was not definite: the window
				res, err = g.Do(ctx, strings.Repeat("k", idem.MaxKeyLen), nil, value)
				expect("the longest key", res, err, idem.Executed)
			})
		}
	}
}
