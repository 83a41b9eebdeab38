package redismodel_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/integration/sim/redismodel"
)

// Tests of the model alone, for what a real server cannot show in a test:
// its clock, and the helpers the simulator uses.

// clock is a settable server clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func run(t *testing.T, s *redismodel.Server, script string, keys ...string) any {
	t.Helper()
	v, err := s.Eval(context.Background(), script, keys).Result()
	if err != nil && err != redis.Nil {
		t.Fatalf("%q: %v", script, err)
	}
	return v
}

// TestExpiry: a key lives until the clock is past its deadline; a
// PEXPIREAT at or before now deletes it at once.
func TestExpiry(t *testing.T) {
	c := &clock{t: time.UnixMilli(1_000_000)}
	s := redismodel.New(c.now)
	run(t, s, "redis.call('hset', 'k', 'f', 'v') return redis.call('pexpireat', 'k', '1000010')")
	if got := run(t, s, "return redis.call('pttl', 'k')"); got != int64(10) {
		t.Fatalf("PTTL = %v, want 10", got)
	}
	if d := s.Dump(); len(d) != 1 || d[0].ExpireAt != 1_000_010 || d[0].Fields["f"] != "v" {
		t.Fatalf("Dump = %+v", d)
	}
	c.t = c.t.Add(10 * time.Millisecond) // at the deadline: still there
	if got := run(t, s, "return {redis.call('exists', 'k'), redis.call('pttl', 'k')}"); !redismodel.Same(got, nil, []any{int64(1), int64(0)}, nil) {
		t.Fatalf("at the deadline: %v, want [1 0]", got)
	}
	c.t = c.t.Add(time.Millisecond)
	if _, ok := s.Hash("k"); ok || len(s.Dump()) != 0 {
		t.Fatal("the key outlived its deadline")
	}
	run(t, s, "return redis.call('set', 's', 'v')")
	if got := run(t, s, "return {redis.call('pexpireat', 's', '1000011'), redis.call('exists', 's')}"); !redismodel.Same(got, nil, []any{int64(1), int64(0)}, nil) {
		t.Fatalf("PEXPIREAT now: %v, want [1 0]", got)
	}
}

// TestErrors: error replies are redis.Error values that go-redis's helpers
// and redisstore classify as replies; a top-level nil is redis.Nil.
func TestErrors(t *testing.T) {
	s := redismodel.New(time.Now)
	ctx := context.Background()
	err := s.EvalSha(ctx, strings.Repeat("0", 40), nil).Err()
	var re redis.Error
	if !redis.HasErrorPrefix(err, "NOSCRIPT") || !errors.As(err, &re) {
		t.Fatalf("EVALSHA of an unknown script: %v", err)
	}
	s.SetOOM(true)
	if err := s.Eval(ctx, "#!lua\nreturn 1", nil).Err(); !redis.IsOOMError(err) {
		t.Fatalf("shebang script out of memory: %v", err)
	}
	if err := s.Eval(ctx, "return false", nil).Err(); err != redis.Nil {
		t.Fatalf("false: %v, want redis.Nil", err)
	}
	if err := s.Eval(ctx, "return 1", nil, struct{}{}).Err(); err == nil || errors.As(err, &re) {
		t.Fatalf("an argument go-redis cannot send: %v, want a client error", err)
	}
}

// TestRecordAndReplay: the recorder sees every request with its reply, and
// replaying them on a server in the same state finds no mismatch, while a
// server in another state does.
func TestRecordAndReplay(t *testing.T) {
	s := redismodel.New(time.Now)
	var calls []redismodel.Call
	s.SetRecorder(func(c redismodel.Call) { calls = append(calls, c) })
	ctx := context.Background()
	script := "return redis.call('hincrby', KEYS[1], 'n', ARGV[1])"
	s.EvalSha(ctx, sha(script), []string{"k"}, 2)
	s.Eval(ctx, script, []string{"k"}, 2)
	s.EvalSha(ctx, sha(script), []string{"k"}, []byte("3"))
	s.SetRecorder(nil)
	if len(calls) != 3 || calls[1].Script != script || calls[2].Args[0] != "3" || calls[2].Reply != int64(5) {
		t.Fatalf("recorded %+v", calls)
	}
	if m := redismodel.Replay(ctx, calls, redismodel.New(time.Now)); len(m) != 0 {
		t.Fatalf("replay on a fresh server: %v", m)
	}
	if m := redismodel.Replay(ctx, calls, s); len(m) != 3 {
		t.Fatalf("replay on a server with the script cached and n=5: %d mismatches, want 3: %v", len(m), m)
	}
	s.FlushScripts()
	if err := s.EvalSha(ctx, sha(script), []string{"k"}, 1).Err(); !redis.HasErrorPrefix(err, "NOSCRIPT") {
		t.Fatalf("EVALSHA after FlushScripts: %v", err)
	}
}

// TestInfo: INFO reports the version, the policy and AOF as set.
func TestInfo(t *testing.T) {
	s := redismodel.New(time.Now)
	s.SetMaxmemoryPolicy("allkeys-lru")
	s.SetAOF(true)
	info := run(t, s, "return redis.call('info')").(string)
	for _, line := range []string{"redis_version:7.0.15\r\n", "maxmemory_policy:allkeys-lru\r\n", "aof_enabled:1\r\n"} {
		if !strings.Contains(info, line) {
			t.Errorf("INFO lacks %q:\n%s", line, info)
		}
	}
}

// TestConcurrent: requests from many goroutines are served one at a time
// (run with -race), and HINCRBY counts every one.
func TestConcurrent(t *testing.T) {
	s := redismodel.New(time.Now)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				s.Eval(context.Background(), "return redis.call('hincrby', 'k', 'n', 1)", nil)
			}
		})
	}
	wg.Wait()
	if h, _ := s.Hash("k"); h["n"] != "400" {
		t.Fatalf("n = %q, want 400", h["n"])
	}
}

// TestDeterministic: two servers given the same requests reply the same,
// random numbers included.
func TestDeterministic(t *testing.T) {
	script := "return {math.random(1000000), redis.call('hincrby', 'k', 'n', math.random(10))}"
	a, b := redismodel.New(time.Now), redismodel.New(time.Now)
	for range 20 {
		x, _ := a.Eval(context.Background(), script, nil).Result()
		y, _ := b.Eval(context.Background(), script, nil).Result()
		if !redismodel.Same(x, nil, y, nil) {
			t.Fatalf("%v and %v", x, y)
		}
	}
}

// TestSelfReference: a table that contains itself ends in an error deep
// down, as in Redis, rather than in a crash.
func TestSelfReference(t *testing.T) {
	s := redismodel.New(time.Now)
	v := run(t, s, "local t = {} t[1] = t return t")
	for range 3000 {
		a, ok := v.([]any)
		if !ok {
			break
		}
		v = a[0]
	}
	if err, ok := v.(error); !ok || err.Error() != "ERR reached lua stack limit" {
		t.Fatalf("innermost element %v, want the stack limit error", v)
	}
}
