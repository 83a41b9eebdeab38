package redisstore

import (
	"context"
	"errors"
	"io"
	"net"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// Unit tests without a server: options, arguments, replies, retries. The
// scripts themselves are tested against a real redis-server (redis_test.go).

// call is one request the fake received.
type call struct {
	cmd, script string // cmd: EVAL or EVALSHA; script: source or SHA-1
	keys        []string
	args        []any
}

// fakeClient answers each request with the next scripted reply (the last
// one repeats) and records the requests.
type fakeClient struct {
	replies []func(c call) (any, error)
	calls   []call
}

func (f *fakeClient) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return f.do(ctx, call{"EVAL", script, keys, args})
}

func (f *fakeClient) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	return f.do(ctx, call{"EVALSHA", sha, keys, args})
}

func (f *fakeClient) do(ctx context.Context, c call) *redis.Cmd {
	f.calls = append(f.calls, c)
	cmd := redis.NewCmd(ctx)
	if len(f.replies) == 0 {
		cmd.SetErr(errors.New("fake: unexpected request"))
		return cmd
	}
	fn := f.replies[0]
	if len(f.replies) > 1 {
		f.replies = f.replies[1:]
	}
	v, err := fn(c)
	cmd.SetVal(v)
	cmd.SetErr(err)
	return cmd
}

func reply(v any) func(call) (any, error)                { return func(call) (any, error) { return v, nil } }
func fail(err error) func(call) (any, error)             { return func(call) (any, error) { return nil, err } }
func replies(fns ...func(call) (any, error)) *fakeClient { return &fakeClient{replies: fns} }

// redisErr is a server error as go-redis returns it. Its type is in an
// internal package of go-redis, so it is made from an exported value of it.
func redisErr(msg string) error {
	return reflect.ValueOf(msg).Convert(reflect.TypeOf(redis.ErrNoScript)).Interface().(error)
}

func newTestStore(t *testing.T, c Client, opts ...Option) *Store {
	t.Helper()
	s, err := New(c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	s.backoff = func(int) time.Duration { return time.Millisecond }
	return s
}

var (
	t0  = time.UnixMilli(1_750_000_000_123)
	acq = idem.Acquisition{
		Key: "ns#abc", Lease: "tok", LeaseUntil: t0.Add(time.Minute),
		ExpiresAt: t0.Add(time.Hour), Fingerprint: "fp", Now: t0,
	}
)

func TestNewAndOptions(t *testing.T) {
	if _, err := New(nil); !errors.Is(err, idem.ErrInvalid) {
		t.Fatalf("New(nil): %v, want ErrInvalid", err)
	}
	for _, n := range []int{-1, 0, MaxResultSizeLimit + 1} {
		if _, err := New(&fakeClient{}, WithMaxResultSize(n)); !errors.Is(err, idem.ErrInvalid) {
			t.Errorf("WithMaxResultSize(%d): %v, want ErrInvalid", n, err)
		}
	}
	s := newTestStore(t, &fakeClient{})
	want := idem.Capabilities{Transactions: false, MaxResultSize: DefaultMaxResultSize, MaxKeySize: idem.MaxStorageKeyLen}
	if got := s.Capabilities(); got != want {
		t.Fatalf("Capabilities() = %+v, want %+v", got, want)
	}
	if got := s.Key("ns#k"); got != "idem:ns#k" {
		t.Fatalf("Key = %q, want the default prefix", got)
	}
	s = newTestStore(t, &fakeClient{}, WithPrefix(""), WithMaxResultSize(2048))
	if got := s.Key("ns#k"); got != "ns#k" {
		t.Fatalf("Key with an empty prefix = %q", got)
	}
	if got := s.Capabilities().MaxResultSize; got != 2048 {
		t.Fatalf("MaxResultSize = %d, want 2048", got)
	}
	// A Guard takes the store's limits.
	if _, err := idem.New(s, "ns", idem.WithMaxResultSize(2049)); !errors.Is(err, idem.ErrInvalid) {
		t.Fatalf("a Guard's cap above the store's: %v, want ErrInvalid", err)
	}
}

func TestAcquireRequest(t *testing.T) {
	written := []any{"status", "IN_PROGRESS", "lease", "tok", "leaseUntil", "1750000060123",
		"updatedAt", "1750000000123", "attempts", "4", "fingerprint", "fp", "expiresAt", "1750003600123"}
	f := replies(reply([]any{int64(1), written}))
	s := newTestStore(t, f, WithPrefix("p:"))
	rec, ok, err := s.Acquire(context.Background(), acq)
	if err != nil || !ok {
		t.Fatalf("Acquire: %v, %v", ok, err)
	}
	want := idem.Record{
		Key: "ns#abc", Status: idem.StatusInProgress, Lease: "tok", LeaseUntil: acq.LeaseUntil,
		ExpiresAt: acq.ExpiresAt, Attempts: 4, Fingerprint: "fp", UpdatedAt: t0,
	}
	if !reflect.DeepEqual(rec, want) {
		t.Fatalf("record\n got %+v\nwant %+v", rec, want)
	}
	if len(f.calls) != 1 {
		t.Fatalf("%d requests, want 1", len(f.calls))
	}
	c := f.calls[0]
	wantArgs := []any{int64(1750000000123), "tok", int64(1750000060123), int64(1750003600123), "fp"}
	if c.cmd != "EVALSHA" || c.script != acquireScript.sha || !slices.Equal(c.keys, []string{"p:ns#abc"}) || !reflect.DeepEqual(c.args, wantArgs) {
		t.Fatalf("request %+v, want EVALSHA %s [p:ns#abc] %v", c, acquireScript.sha, wantArgs)
	}

	// No expiry and no fingerprint travel as "".
	a := acq
	a.ExpiresAt, a.Fingerprint = time.Time{}, ""
	f = replies(reply([]any{int64(1), []any{}}))
	if _, _, err := newTestStore(t, f).Acquire(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if args := f.calls[0].args; args[3] != "" || args[4] != "" {
		t.Fatalf("args %v: want \"\" for no expiry and no fingerprint", args)
	}
}

func TestAcquireConflictReturnsRecord(t *testing.T) {
	inTheWay := []any{"status", "COMPLETED", "lease", "old", "attempts", "3", "result", "r\x00\xff",
		"resultOmitted", "", "lastError", "", "somethingNew", "ignored", "expiresAt", "1750003600123"}
	f := replies(reply([]any{int64(0), inTheWay}))
	rec, ok, err := newTestStore(t, f).Acquire(context.Background(), acq)
	if err != nil || ok {
		t.Fatalf("Acquire: %v, %v; want not acquired", ok, err)
	}
	if rec.Status != idem.StatusCompleted || rec.Lease != "old" || rec.Attempts != 3 ||
		string(rec.Result) != "r\x00\xff" || rec.ResultOmitted || !rec.ExpiresAt.Equal(acq.ExpiresAt) {
		t.Fatalf("record in the way: %+v", rec)
	}
	if len(f.calls) != 1 {
		t.Fatalf("%d requests for a conflict, want 1", len(f.calls))
	}
}

func TestBadRepliesAreErrors(t *testing.T) {
	for name, v := range map[string]any{
		"not an array":   "OK",
		"short":          []any{int64(1)},
		"flag not int":   []any{"1", []any{}},
		"odd hash":       []any{int64(0), []any{"status"}},
		"bad attempts":   []any{int64(0), []any{"attempts", "three"}},
		"bad leaseUntil": []any{int64(0), []any{"leaseUntil", "soon"}},
		"value not str":  []any{int64(0), []any{"status", int64(1)}},
	} {
		if _, _, err := newTestStore(t, replies(reply(v))).Acquire(context.Background(), acq); err == nil || !strings.Contains(err.Error(), `"ns#abc"`) {
			t.Errorf("%s: %v, want an error naming the key", name, err)
		}
	}
}

func TestNoScriptFallsBackToEval(t *testing.T) {
	f := replies(fail(redis.ErrNoScript), reply(int64(1)))
	s := newTestStore(t, f)
	if err := s.Release(context.Background(), "ns#abc", "tok", idem.Released{Status: idem.StatusFailed, Reason: "why", Now: t0}); err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 2 || f.calls[0].cmd != "EVALSHA" || f.calls[1].cmd != "EVAL" || f.calls[1].script != releaseLua {
		t.Fatalf("requests %+v, want EVALSHA then EVAL of the source", f.calls)
	}
	if !reflect.DeepEqual(f.calls[0].args, f.calls[1].args) {
		t.Fatalf("EVAL args %v differ from EVALSHA's %v", f.calls[1].args, f.calls[0].args)
	}
}

func TestCompleteRequest(t *testing.T) {
	for name, tc := range map[string]struct {
		c    idem.Completion
		want []any
	}{
		"result":  {idem.Completion{Result: []byte("r"), ExpiresAt: acq.ExpiresAt, Now: t0}, []any{"tok", int64(1750003600123), int64(1750000000123), []byte("r"), ""}},
		"omitted": {idem.Completion{ResultOmitted: true, ExpiresAt: acq.ExpiresAt, Now: t0}, []any{"tok", int64(1750003600123), int64(1750000000123), []byte(nil), "1"}},
		"none":    {idem.Completion{Now: t0}, []any{"tok", "", int64(1750000000123), []byte(nil), ""}},
	} {
		f := replies(reply(int64(1)))
		if err := newTestStore(t, f).Complete(context.Background(), "ns#abc", "tok", tc.c); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c := f.calls[0]; c.script != completeScript.sha || !reflect.DeepEqual(c.args, tc.want) {
			t.Fatalf("%s: request %+v, want args %v", name, c, tc.want)
		}
	}
}

func TestFencedOutIsLeaseLost(t *testing.T) {
	s := newTestStore(t, replies(reply(int64(0))))
	ctx := context.Background()
	if err := s.Complete(ctx, "ns#abc", "tok", idem.Completion{Now: t0}); !errors.Is(err, idem.ErrLeaseLost) || !strings.Contains(err.Error(), `"ns#abc"`) {
		t.Fatalf("Complete: %v, want ErrLeaseLost naming the key", err)
	}
	if err := s.Release(ctx, "ns#abc", "tok", idem.Released{Status: idem.StatusFailed, Reason: "", Now: t0}); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("Release: %v, want ErrLeaseLost", err)
	}
	s = newTestStore(t, replies(reply("OK")))
	if err := s.Complete(ctx, "ns#abc", "tok", idem.Completion{Now: t0}); err == nil || errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("Complete with an unexpected reply: %v, want a store error", err)
	}
}

func TestCompleteTooLargeMakesNoRequest(t *testing.T) {
	f := replies(reply(int64(1)))
	s := newTestStore(t, f, WithMaxResultSize(10))
	err := s.Complete(context.Background(), "ns#abc", "tok", idem.Completion{Result: make([]byte, 11), Now: t0})
	if !errors.Is(err, idem.ErrResultTooLarge) || len(f.calls) != 0 {
		t.Fatalf("11 bytes over a cap of 10: %v after %d requests, want ErrResultTooLarge and none", err, len(f.calls))
	}
	if err := s.Complete(context.Background(), "ns#abc", "tok", idem.Completion{Result: make([]byte, 10), Now: t0}); err != nil {
		t.Fatalf("10 bytes under a cap of 10: %v", err)
	}
}

func TestCompleteRetriesTransientErrors(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	f := replies(fail(reset), fail(io.EOF), fail(redisErr("LOADING Redis is loading the dataset in memory")), reply(int64(1)))
	s := newTestStore(t, f)
	if err := s.Complete(context.Background(), "ns#abc", "tok", idem.Completion{Result: []byte("r"), Now: t0}); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if len(f.calls) != 4 {
		t.Fatalf("%d requests, want 4", len(f.calls))
	}
	for _, c := range f.calls[1:] {
		if !reflect.DeepEqual(c, f.calls[0]) {
			t.Fatalf("retry %+v differs from the first request %+v", c, f.calls[0])
		}
	}
}

func TestCompleteRetriesUntilDeadline(t *testing.T) {
	f := replies(fail(io.EOF))
	s := newTestStore(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	s.backoff = func(n int) time.Duration {
		if n == 9 {
			cancel() // the lease ends
		}
		return time.Millisecond
	}
	err := s.Complete(ctx, "ns#abc", "tok", idem.Completion{Now: t0})
	if !errors.Is(err, io.EOF) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Complete: %v, want the last error and the context's", err)
	}
	if len(f.calls) < 10 {
		t.Fatalf("%d requests: Complete gave up before its context ended", len(f.calls))
	}
}

func TestBoundedRetries(t *testing.T) {
	ctx := context.Background()
	f := replies(fail(io.EOF))
	if _, _, err := newTestStore(t, f).Acquire(ctx, acq); !errors.Is(err, io.EOF) || len(f.calls) != acquireTries {
		t.Fatalf("Acquire: %v after %d requests, want io.EOF after %d", err, len(f.calls), acquireTries)
	}
	f = replies(fail(io.EOF))
	if err := newTestStore(t, f).Release(ctx, "ns#abc", "tok", idem.Released{Status: idem.StatusFailed, Reason: "", Now: t0}); !errors.Is(err, io.EOF) || len(f.calls) != releaseTries {
		t.Fatalf("Release: %v after %d requests, want io.EOF after %d", err, len(f.calls), releaseTries)
	}
}

func TestPermanentErrorsAreNotRetried(t *testing.T) {
	wrongType := redisErr("WRONGTYPE Operation against a key holding the wrong kind of value")
	f := replies(fail(wrongType))
	err := newTestStore(t, f).Complete(context.Background(), "ns#abc", "tok", idem.Completion{Now: t0})
	var rerr redis.Error
	if !errors.As(err, &rerr) || !strings.Contains(err.Error(), `"ns#abc"`) || len(f.calls) != 1 {
		t.Fatalf("Complete: %v after %d requests, want the server's error as is, naming the key, after 1", err, len(f.calls))
	}
}

func TestTransient(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{io.EOF, true},
		{io.ErrUnexpectedEOF, true},
		{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{syscall.ECONNRESET, true},
		{redis.ErrPoolTimeout, true},
		{redisErr("LOADING Redis is loading the dataset in memory"), true},
		{redisErr("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{redisErr("CLUSTERDOWN The cluster is down"), true},
		{redisErr("MASTERDOWN Link with MASTER is down"), true},
		{redisErr("READONLY You can't write against a read only replica."), true},
		{redisErr("BUSY Redis is busy running a script."), true},
		{redisErr("ERR max number of clients reached"), true},
		{redisErr("OOM command not allowed when used memory > 'maxmemory'."), false},
		{redisErr("WRONGTYPE Operation against a key holding the wrong kind of value"), false},
		{redisErr("ERR Error running script"), false},
		{context.DeadlineExceeded, false},
		{context.Canceled, false},
		{redis.ErrClosed, false},
		{errors.New("something else"), false},
	} {
		if got := transient(tc.err); got != tc.want {
			t.Errorf("transient(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestRingIsRefused: a Ring moves a shard's keys to the others when the
// shard stops answering its heartbeat, so a receipt that is only out of
// reach reads as absent, and a copy runs the effect again.
func TestRingIsRefused(t *testing.T) {
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1", "b": "127.0.0.1:2"}})
	defer ring.Close()
	if _, err := New(ring); !errors.Is(err, idem.ErrInvalid) {
		t.Fatalf("New(*redis.Ring): %v, want ErrInvalid", err)
	}
}

// TestWrongTypeIsInvalid: a key holding another kind of value (the prefix
// collides with other data) is the caller's mistake, not a store outage.
func TestWrongTypeIsInvalid(t *testing.T) {
	s := newTestStore(t, replies(fail(redisErr("WRONGTYPE Operation against a key holding the wrong kind of value"))))
	if _, _, err := s.Acquire(context.Background(), acq); !errors.Is(err, idem.ErrInvalid) {
		t.Fatalf("Acquire on a key of another type: %v, want ErrInvalid", err)
	}
	g, err := idem.New(s, "ns")
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := g.Do(context.Background(), "k", nil, func(context.Context) ([]byte, error) { return nil, nil }); res.Outcome != idem.Rejected {
		t.Fatalf("Do: %v, want Rejected (not StoreError)", res.Outcome)
	}
}
