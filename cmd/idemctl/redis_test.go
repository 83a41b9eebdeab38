package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/redisstore"
)

// idemctl on a Redis store (--redis-url), against a real redis-server:
// the same commands and the same races as on a table.

// redisHarness is a harness whose records are in a redis-server of its
// own. Its clock starts at the real time, since the server expires keys
// by its own.
type redisHarness struct {
	*harness
	url    string
	client *redis.Client
	store  *redisstore.Store // the consumer's: default prefix
}

func newRedisHarness(t *testing.T) *redisHarness {
	h := &redisHarness{harness: newHarness(t)}
	h.now = time.Now().UTC().Truncate(time.Second)
	h.url, h.client = startRedis(t)
	var err error
	if h.store, err = redisstore.New(h.client); err != nil {
		t.Fatal(err)
	}
	// Nothing here needs AWS unless a test gives --stack.
	h.connectErr = errors.New("no AWS in this test")
	return h
}

// put stores rec under key's storage key, as redisstore lays it out.
func (h *redisHarness) put(key string, rec idem.Record) {
	h.t.Helper()
	ms := func(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
	fields := []any{"status", string(rec.Status), "lease", rec.Lease, "attempts", rec.Attempts}
	for name, v := range map[string]string{"fingerprint": rec.Fingerprint, "lastError": rec.LastError, "prevStatus": string(rec.PrevStatus), "result": string(rec.Result)} {
		if v != "" {
			fields = append(fields, name, v)
		}
	}
	for name, t := range map[string]time.Time{"leaseUntil": rec.LeaseUntil, "expiresAt": rec.ExpiresAt, "updatedAt": rec.UpdatedAt} {
		if !t.IsZero() {
			fields = append(fields, name, ms(t))
		}
	}
	if rec.ResultOmitted {
		fields = append(fields, "resultOmitted", "1")
	}
	ctx, k := h.ctx(), h.key(key)
	if err := h.client.Del(ctx, k).Err(); err != nil {
		h.t.Fatal(err)
	}
	if err := h.client.HSet(ctx, k, fields...).Err(); err != nil {
		h.t.Fatal(err)
	}
	if !rec.ExpiresAt.IsZero() {
		h.client.PExpireAt(ctx, k, rec.ExpiresAt)
	}
}

func (h *redisHarness) key(key string) string { return h.store.Key(h.guard.StorageKey(key)) }

func (h *redisHarness) ctx() context.Context {
	ctx, cancel := context.WithTimeout(h.t.Context(), 5*time.Second)
	h.t.Cleanup(cancel)
	return ctx
}

// hash is key's record as Redis holds it.
func (h *redisHarness) hash(key string) map[string]string {
	h.t.Helper()
	m, err := h.client.HGetAll(h.ctx(), h.key(key)).Result()
	if err != nil {
		h.t.Fatal(err)
	}
	return m
}

// args are args on the harness's Redis and namespace.
func (h *redisHarness) args(args ...string) []string {
	return append(args, "--redis-url", h.url, "--namespace", testNS)
}

// ok runs args on Redis with --output json, which must succeed, and
// decodes the output into v.
func (h *redisHarness) ok(v any, args ...string) {
	h.t.Helper()
	if code := h.run(h.args(append(args, "--output", "json")...)...); code != 0 {
		h.t.Fatalf("idemctl %v: exit %d: %s", args, code, h.errOut.String())
	}
	if err := json.Unmarshal(h.out.Bytes(), v); err != nil {
		h.t.Fatalf("idemctl %v: %v\n%s", args, err, h.out.String())
	}
}

// fails runs args on Redis; it must exit with code and one line on stderr
// that says want.
func (h *redisHarness) fails(code int, want string, args ...string) {
	h.t.Helper()
	got := h.run(h.args(args...)...)
	line := h.errOut.String()
	if got != code || strings.Count(line, "\n") != 1 || !strings.Contains(line, want) {
		h.t.Errorf("idemctl %v: exit %d, stderr %q; want exit %d, one line saying %q", args, got, line, code, want)
	}
}

// TestRedisHeldKey: the operator's whole round on a Redis store — list
// the held keys, inspect one, settle it — with no AWS at all; then a copy
// of the key is a Duplicate that says an operator wrote its receipt.
func TestRedisHeldKey(t *testing.T) {
	h := newRedisHarness(t)
	h.put("parked", h.held("parked", 2))
	h.put("done", h.completed("done"))
	h.put("broken", h.failed("broken", 3))
	h.put("unsure", h.unknown("unsure", 1))

	var list struct {
		Redis, Table string
		Matched      int
		Records      []struct{ StorageKey, State string }
	}
	h.ok(&list, "list", "--status", "held")
	if list.Redis != h.url || list.Table != "" || list.Matched != 1 || list.Records[0].StorageKey != h.guard.StorageKey("parked") || list.Records[0].State != "held" {
		t.Fatalf("list --status held: %+v", list)
	}
	h.ok(&list, "list")
	if list.Matched != 4 {
		t.Fatalf("list: %d records, want 4: %+v", list.Matched, list)
	}
	if code := h.run(h.args("list")...); code != 0 || !strings.Contains(h.out.String(), "4 all record(s) in namespace orders of "+h.url) ||
		!strings.Contains(h.out.String(), "never (held)") {
		t.Fatalf("list, table: exit %d\n%s%s", code, h.out.String(), h.errOut.String())
	}

	var in inspectOut
	h.ok(&in, "inspect", "parked")
	if k := in.Keys[0]; k.State != "held" || !strings.Contains(k.Meaning, "`idemctl resolve parked --done` or `--not-done`") || !strings.Contains(in.DLQ.Note, "not checked") {
		t.Fatalf("inspect: %+v", in)
	}

	var res struct {
		Redis         string
		Written       bool
		Before, After struct {
			State    string
			Resolved bool
		}
	}
	h.ok(&res, "resolve", "parked", "--done", "--yes")
	if !res.Written || res.Redis != h.url || res.Before.State != "held" || res.After.State != "completed" || !res.After.Resolved {
		t.Fatalf("resolve --done: %+v", res)
	}
	hash := h.hash("parked")
	expires := h.now.Add(7 * 24 * time.Hour)
	if hash["status"] != "COMPLETED" || !strings.HasPrefix(hash["lease"], "idemctl-") || hash["resolved"] != "1" || hash["resultOmitted"] != "1" ||
		hash["attempts"] != "2" || hash["expiresAt"] != strconv.FormatInt(expires.UnixMilli(), 10) || hash["lastError"] != "" {
		t.Fatalf("the receipt written: %v", hash)
	}
	if ms, err := h.client.Do(h.ctx(), "PEXPIRETIME", h.key("parked")).Int64(); err != nil || ms != expires.UnixMilli() {
		t.Fatalf("the key's TTL: PEXPIRETIME %d, %v; want the record's expiry %d (--retention from now)", ms, err, expires.UnixMilli())
	}
	if code := h.run(h.args("inspect", "parked")...); code != 0 || !strings.Contains(h.out.String(), "none: an operator wrote the receipt (idemctl resolve --done)") {
		t.Fatalf("inspect after resolve: exit %d\n%s", code, h.out.String())
	}

	g, err := idem.New(h.store, testNS)
	if err != nil {
		t.Fatal(err)
	}
	got, err := g.Do(h.ctx(), "parked", []byte(body("parked", 0)), func(context.Context) ([]byte, error) {
		t.Error("the effect ran over the operator's receipt")
		return nil, nil
	})
	if err != nil || got.Outcome != idem.Duplicate || !got.Resolved {
		t.Fatalf("the consumer's next copy: %+v, %v; want a Duplicate, Resolved", got, err)
	}

	var stats struct {
		Redis   string
		Records map[string]int
	}
	h.ok(&stats, "stats")
	if stats.Redis != h.url || stats.Records["total"] != 4 || stats.Records["completed"] != 2 || stats.Records["held"] != 0 || stats.Records["unknown"] != 1 {
		t.Fatalf("stats: %+v", stats)
	}
}

// TestRedisResolveNotDone releases a held key, keeping its token, with the
// expiry it lacked; the consumer's next copy runs the effect.
func TestRedisResolveNotDone(t *testing.T) {
	h := newRedisHarness(t)
	h.put("parked", h.held("parked", 2))
	h.ok(&struct{}{}, "resolve", "parked", "--not-done", "--yes", "--retention", "1h")
	hash := h.hash("parked")
	if hash["status"] != "FAILED" || hash["lease"] != "lease-parked" || hash["lastError"] != notDoneReason || hash["resolved"] != "" ||
		hash["expiresAt"] != strconv.FormatInt(h.now.Add(time.Hour).UnixMilli(), 10) {
		t.Fatalf("released: %v", hash)
	}
	if ttl, err := h.client.PTTL(h.ctx(), h.key("parked")).Result(); err != nil || ttl <= 0 {
		t.Fatalf("PTTL %v, %v: the released key has no TTL", ttl, err)
	}
	g, err := idem.New(h.store, testNS)
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	if res, err := g.Do(h.ctx(), "parked", []byte(body("parked", 0)), func(context.Context) ([]byte, error) { ran = true; return nil, nil }); err != nil || res.Outcome != idem.Executed || !ran {
		t.Fatalf("the consumer's next copy: %+v, %v, ran %v; want Executed", res, err, ran)
	}
}

// TestRedisResolveRefusedWhenChanged: between resolve's read and its
// write (while the operator reads the prompt), the attempt that held the
// record writes its late receipt under the same token, a copy takes the
// record over, or anything touches it. Nothing is written: the record is
// as the change left it.
func TestRedisResolveRefusedWhenChanged(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(h *redisHarness)
	}{
		{"late receipt, same token", func(h *redisHarness) {
			if err := h.store.Complete(h.ctx(), h.guard.StorageKey("stuck"), "lease-stuck", idem.Completion{ExpiresAt: h.now.Add(time.Hour), Now: h.now}); err != nil {
				h.t.Fatal(err)
			}
		}},
		{"taken over by a copy", func(h *redisHarness) {
			a := idem.Acquisition{Key: h.guard.StorageKey("stuck"), Lease: "lease-copy", LeaseUntil: h.now.Add(time.Minute), ExpiresAt: h.now.Add(time.Hour), Now: h.now}
			if _, ok, err := h.store.Acquire(h.ctx(), a); err != nil || !ok {
				h.t.Fatalf("the copy's acquire: %v, %v", ok, err)
			}
		}},
		{"touched", func(h *redisHarness) {
			h.client.HSet(h.ctx(), h.key("stuck"), "updatedAt", h.now.UnixMilli())
		}},
	} {
		for _, flag := range []string{"--done", "--not-done"} {
			t.Run(tc.name+" "+flag, func(t *testing.T) {
				h := newRedisHarness(t)
				h.put("stuck", h.inProgress("stuck", -time.Minute)) // unconfirmed
				var changed map[string]string
				h.inTTY = true
				h.stdinReader = &changingReader{answer: "y\n", change: func() { tc.change(h); changed = h.hash("stuck") }}
				h.fails(exitRuntime, "the record changed since it was read", "resolve", "stuck", flag)
				if got := h.hash("stuck"); !reflect.DeepEqual(got, changed) {
					t.Fatalf("after a refused resolve: %v; want the changed record untouched: %v", got, changed)
				}
			})
		}
	}
}

// TestRedisResolveLiveLease: a record an attempt holds now is refused
// before any write, as on a table.
func TestRedisResolveLiveLease(t *testing.T) {
	h := newRedisHarness(t)
	h.put("busy", h.inProgress("busy", 2*time.Minute))
	before := h.hash("busy")
	h.fails(exitRuntime, "may be running the effect now", "resolve", "busy", "--done", "--yes")
	if got := h.hash("busy"); !reflect.DeepEqual(got, before) {
		t.Fatalf("written: %v", got)
	}
}

// barrier lets n operators answer their prompts only once all of them
// have read the record.
type barrier struct {
	n       int
	mu      sync.Mutex
	arrived int
	all     chan struct{}
}

// reader is one operator's terminal: it answers "y" once everyone is at
// the prompt, or fails after a deadline.
func (b *barrier) reader() io.Reader {
	return readerFunc(func(p []byte) (int, error) {
		b.mu.Lock()
		b.arrived++
		if b.arrived == b.n {
			close(b.all)
		}
		b.mu.Unlock()
		select {
		case <-b.all:
			return copy(p, "y\n"), io.EOF
		case <-time.After(30 * time.Second):
			return 0, errors.New("waited 30s for the other operator to reach the prompt")
		}
	})
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// TestRedisResolveAtOnce: two operators settle one held key at once, one
// --done and one --not-done, both having read it before either writes.
// One write lands; the other is refused with the record as it is now, and
// the record is the first one's.
func TestRedisResolveAtOnce(t *testing.T) {
	h := newRedisHarness(t)
	h.put("parked", h.held("parked", 2))
	h.inTTY = true
	b := &barrier{n: 2, all: make(chan struct{})}
	flags := []string{"--done", "--not-done"}
	codes := make([]int, 2)
	outs, errs := make([]bytes.Buffer, 2), make([]bytes.Buffer, 2)
	var wg sync.WaitGroup
	for i, flag := range flags {
		a := h.app(b.reader(), &outs[i], &errs[i])
		wg.Go(func() { codes[i] = a.run(t.Context(), h.args("resolve", "parked", flag, "--output", "json")) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("waited 60s for the two resolves to end")
	}
	win := -1
	for i := range flags {
		if codes[i] == exitOK {
			if win >= 0 {
				t.Fatalf("both resolves wrote:\n%s\n%s", outs[0].String(), outs[1].String())
			}
			win = i
		}
	}
	if win < 0 {
		t.Fatalf("neither resolve wrote: %s; %s", errs[0].String(), errs[1].String())
	}
	lose := 1 - win
	if codes[lose] != exitRuntime || !strings.Contains(errs[lose].String(), "the record changed since it was read: it is now") {
		t.Fatalf("the second resolve: exit %d, %s; want it refused with the record as it is now", codes[lose], errs[lose].String())
	}
	var out struct{ After struct{ Status string } }
	if err := json.Unmarshal(outs[win].Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if got := h.hash("parked")["status"]; got != out.After.Status {
		t.Fatalf("the record is %s; the winner (%s) wrote %s", got, flags[win], out.After.Status)
	}
}

// TestRedisFlags: where the Redis store comes from, and the mistakes
// refused before any request.
func TestRedisFlags(t *testing.T) {
	h := newRedisHarness(t)
	h.put("parked", h.held("parked", 2))

	t.Run("IDEM_REDIS_URL", func(t *testing.T) {
		h.env = map[string]string{envRedisURL: h.url}
		defer func() { h.env = nil }()
		if code := h.run("inspect", "parked", "--namespace", testNS); code != 0 || !strings.Contains(h.out.String(), "Redis "+h.url+", namespace orders") {
			t.Fatalf("exit %d: %s%s", code, h.out.String(), h.errOut.String())
		}
		// And with --stack: the queues are the stack's, the records Redis's.
		h.connectErr = nil
		defer func() { h.connectErr = errors.New("no AWS in this test") }()
		h.sqs.add(h.dlqURL, body("parked", 0), h.now.Add(-time.Hour), nil)
		out, code := h.inspect("parked")
		if code != 0 || out.Keys[0].State != "held" || len(out.Keys[0].DLQMessages) != 1 ||
			!strings.Contains(out.Keys[0].Meaning, "in the DLQ: `idemctl redrive` leaves it (held: settle it first with idemctl resolve") {
			t.Fatalf("inspect --stack on Redis: exit %d, %+v", code, out)
		}
		h.fails(exitUsage, "--table and --redis-url (or IDEM_REDIS_URL) name two receipt stores", "inspect", "parked", "--table", testTable)
	})
	for _, tc := range []struct {
		name, url string
		code      int
		want      string
		not       string
	}{
		{"not a Redis URL", "http://127.0.0.1:6379", exitUsage, "--redis-url (or IDEM_REDIS_URL)", ""},
		{"nobody there, password hidden", "redis://op:s3cret@127.0.0.1:1/0", exitRuntime, "connect to Redis redis://op:xxxxx@127.0.0.1:1/0", "s3cret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code := h.run("inspect", "parked", "--redis-url", tc.url, "--namespace", testNS)
			if line := h.errOut.String(); code != tc.code || !strings.Contains(line, tc.want) || (tc.not != "" && strings.Contains(line, tc.not)) {
				t.Fatalf("exit %d, %q; want exit %d saying %q", code, line, tc.code, tc.want)
			}
		})
	}
	h.fails(exitUsage, "--partition-value is for a DynamoDB table", "list", "--partition-value", "IDEM")
	h.fails(exitUsage, "two receipt stores", "list", "--table", testTable)
}
