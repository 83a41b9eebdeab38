package sim

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/integration/sim/redismodel"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/redisstore"
)

// redisBackend is redisstore.Store over the Redis model, which runs the
// store's real scripts. Its server can fill up (noeviction): while it is
// full, scripts that may grow memory are refused as Redis 7 refuses them.
type redisBackend struct {
	w   *world
	srv *redismodel.Server
	s   *redisstore.Store

	mu       sync.Mutex
	fullTill time.Time
}

func newRedisBackend(w *world) *redisBackend {
	b := &redisBackend{w: w, srv: redismodel.New(time.Now), s: redisStore}
	if w.cfg.CheckReplicas {
		b.checkReplicas(w.cfg.Replicas)
	}
	return b
}

// redisStore is the Store of every Redis schedule: its requests find their
// schedule's backend through their context.
var redisStore = func() *redisstore.Store {
	s, err := redisstore.New(redisWire{}, redisstore.WithBackoff(jitter))
	must(err)
	return s
}()

func (b *redisBackend) store() idem.Store { return b.s }
func (b *redisBackend) expire(time.Time)  {} // Redis expires keys itself (PEXPIREAT), on the bubble's clock
func (b *redisBackend) ledger(string) int { return 0 }

func (b *redisBackend) fillFor(d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if until := time.Now().Add(d); until.After(b.fullTill) {
		b.fullTill = until
		b.w.logf("redis", "out of memory for %s", d)
	}
}

func (b *redisBackend) full() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return time.Now().Before(b.fullTill) && !b.w.calm.Load()
}

// record reads the hash of skey as redisstore lays it out.
func (b *redisBackend) record(skey string) (idem.Record, bool) {
	h, ok := b.srv.Hash(b.s.Key(skey))
	if !ok {
		return idem.Record{}, false
	}
	ms := func(f string) time.Time {
		n, err := strconv.ParseInt(h[f], 10, 64)
		if err != nil {
			return time.Time{}
		}
		return time.UnixMilli(n)
	}
	attempts, _ := strconv.Atoi(h["attempts"])
	rec := idem.Record{Key: skey, Status: idem.Status(h["status"]), Lease: h["lease"], LeaseUntil: ms("leaseUntil"),
		ExpiresAt: ms("expiresAt"), Attempts: attempts, Fingerprint: h["fingerprint"], ResultOmitted: h["resultOmitted"] == "1",
		UpdatedAt: ms("updatedAt"), LastError: h["lastError"]}
	if v := h["result"]; v != "" {
		rec.Result = []byte(v)
	}
	return rec, true
}

// redisWire is the redisstore.Client of the processes: each script is a
// request through the scheduler to the model of the schedule its context
// belongs to.
type redisWire struct{}

func (r redisWire) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	b := procOf(ctx).w.store.(*redisBackend)
	c := redismodel.Call{SHA: sha1Hex(script), Script: script, Keys: keys, Args: args}
	return b.do(ctx, c, func() *redis.Cmd { return b.srv.Eval(ctx, script, keys, args...) })
}

func (r redisWire) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	b := procOf(ctx).w.store.(*redisBackend)
	c := redismodel.Call{SHA: sha, Keys: keys, Args: args}
	return b.do(ctx, c, func() *redis.Cmd { return b.srv.EvalSha(ctx, sha, keys, args...) })
}

func (b *redisBackend) do(ctx context.Context, c redismodel.Call, send func() *redis.Cmd) *redis.Cmd {
	var reply *redis.Cmd
	i := -1
	skey := strings.TrimPrefix(c.Keys[0], b.s.Key(""))
	lost := error(io.ErrUnexpectedEOF)
	err := b.w.request(ctx, skey, func() {
		full := b.full()
		b.srv.SetOOM(full)
		if full {
			b.w.check.full(b.w.actorOf(ctx))
		}
		before, existed := b.record(skey)
		reply = send()
		if after, ok := b.record(skey); full && ok && after.Status == idem.StatusInProgress && after.Lease != before.Lease {
			// Out of memory, a lease whose receipt might be refused must
			// not be taken: the acquire is refused before the effect.
			b.w.check.violation("%s: took a lease on %s while the server was out of memory", b.w.actorOf(ctx), short(skey))
		}
		c.Reply, c.Err = reply.Result()
		i = b.w.note(WireCall{Existed: existed, OOM: full, Redis: &c})
	}, func(f fault) error {
		b.w.note(WireCall{Fault: f, Redis: &c})
		if f == faultThrottle {
			return serverError("LOADING Redis is loading the dataset in memory")
		}
		return &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}, lost)
	if err != nil {
		if err == lost {
			b.w.markLost(i)
		}
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(err)
		return cmd
	}
	return reply
}

func sha1Hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// serverError is an error reply, as go-redis gives it.
type serverError string

func (e serverError) Error() string { return string(e) }
func (serverError) RedisError()     {}

var _ redis.Error = serverError("")

// held lists the HELD records of the keyspace.
func (b *redisBackend) held() []string {
	var out []string
	for _, e := range b.srv.Dump() {
		if e.Fields["status"] == string(idem.StatusHeld) {
			out = append(out, strings.TrimPrefix(e.Key, b.s.Key("")))
		}
	}
	return out
}
