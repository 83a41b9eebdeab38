package redismodel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/integration/sim/redismodel"
)

// The scripts of redisstore before they had shebangs (compat mode): the
// acquire's first write is HDEL, which is not denyoom, the complete's is
// HSET, which is.
const (
	compatAcquire = `
local key, now = KEYS[1], tonumber(ARGV[1])
local f = redis.call('HMGET', key, 'status', 'leaseUntil', 'expiresAt')
local status, leaseUntil, expiresAt = f[1], tonumber(f[2]), tonumber(f[3])
local takeable = not status
	or (expiresAt ~= nil and expiresAt < now)
	or status == 'FAILED'
	or (status == 'IN_PROGRESS' and (leaseUntil == nil or leaseUntil < now))
if not takeable then
	return {0, redis.call('HGETALL', key)}
end
redis.call('HDEL', key, 'result', 'resultOmitted', 'lastError', 'fingerprint', 'expiresAt')
redis.call('HSET', key, 'status', 'IN_PROGRESS', 'lease', ARGV[2], 'leaseUntil', ARGV[3], 'updatedAt', ARGV[1])
redis.call('HINCRBY', key, 'attempts', 1)
if ARGV[5] ~= '' then
	redis.call('HSET', key, 'fingerprint', ARGV[5])
end
if ARGV[4] ~= '' then
	redis.call('HSET', key, 'expiresAt', ARGV[4])
end
local rec = redis.call('HGETALL', key)
if ARGV[4] ~= '' then
	redis.call('PEXPIREAT', key, ARGV[4])
else
	redis.call('PERSIST', key)
end
return {1, rec}
`
	compatComplete = `
local key = KEYS[1]
if redis.call('HGET', key, 'lease') ~= ARGV[1] then
	return 0
end
redis.call('HSET', key, 'status', 'COMPLETED', 'updatedAt', ARGV[3])
redis.call('HDEL', key, 'lastError')
if ARGV[4] ~= '' then
	redis.call('HSET', key, 'result', ARGV[4])
	redis.call('HDEL', key, 'resultOmitted')
elseif ARGV[5] ~= '' then
	redis.call('HSET', key, 'resultOmitted', '1')
	redis.call('HDEL', key, 'result')
else
	redis.call('HDEL', key, 'result', 'resultOmitted')
end
if ARGV[2] ~= '' then
	redis.call('HSET', key, 'expiresAt', ARGV[2])
	redis.call('PEXPIREAT', key, ARGV[2])
else
	redis.call('HDEL', key, 'expiresAt')
	redis.call('PERSIST', key)
end
return 1
`
	shebangWrite  = "#!lua\nreturn redis.call('hset', KEYS[1], 'cached', '1')"
	compatCached  = "return redis.call('hset', KEYS[1], 'compat', '1')"
	errAfterWrite = "redis.call('hdel', KEYS[1], 'a') error('after a write')"
)

var oomErr = "OOM command not allowed when used memory > 'maxmemory'."

// oomCase is a request sent out of memory and the reply the rule predicts
// (an error text, or a value).
type oomCase struct {
	probe
	want    any
	wantErr string
}

func oomProbe(script string, want any, wantErr string, keys ...string) oomCase {
	return oomCase{probe: probe{script: script, keys: keys}, want: want, wantErr: wantErr}
}

// oomSetup runs before memory runs out: the keys, and two scripts cached.
var oomSetup = []probe{
	eval("redis.call('hset', 'k', 'a', '1') redis.call('set', 's', 'v') return 1"),
	eval(shebangWrite, "k"), eval(compatCached, "k"),
}

// oomCases state the rule. A shebang script without allow-oom or no-writes
// is refused before it runs. A compat script runs; its denyoom command
// fails until the script has called a write command that passed the
// script's checks, whether that write then failed or changed nothing.
// Writes are not undone.
func oomCases() []oomCase {
	const wrote = 1
	return []oomCase{
		oomProbe("return redis.call('hset',KEYS[1],'b','2')", nil, oomErr+" script: "+sha("return redis.call('hset',KEYS[1],'b','2')")+", on @user_script:1.", "k"),
		oomProbe("local r = redis.pcall('hset',KEYS[1],'b','2') redis.call('hdel',KEYS[1],'zz') return {r, redis.call('hset',KEYS[1],'c','3')}", nil, oomErr, "k"),
		oomProbe("local r = redis.pcall('hset',KEYS[1],'b','2') return {r.err, redis.call('hdel',KEYS[1],'zz'), redis.call('hset',KEYS[1],'c','3')}", []any{oomErr, int64(0), int64(0)}, "", "k"),
		oomProbe("redis.call('hget',KEYS[1],'a') return redis.pcall('hincrby',KEYS[1],'a',1).err", oomErr, "", "k"),
		oomProbe("redis.pcall('hdel','s','x') return redis.call('hset',KEYS[1],'d','4')", int64(wrote), "", "k"),
		oomProbe("redis.pcall('hdel','s') return redis.pcall('hset',KEYS[1],'e','5').err", oomErr, "", "k"),
		oomProbe("redis.pcall('hset','k2','x','y','z') return redis.pcall('hset',KEYS[1],'f','5').err", oomErr, "", "k"),
		oomProbe("redis.pcall('pexpireat','k','x') return redis.call('hset',KEYS[1],'g','5')", int64(wrote), "", "k"),
		oomProbe("redis.pcall('nosuch','k') return redis.pcall('hset',KEYS[1],'h','5').err", oomErr, "", "k"),
		oomProbe("redis.call('persist',KEYS[1]) return redis.call('hset',KEYS[1],'i','7')", int64(wrote), "", "k"),
		oomProbe("redis.call('del','nokey') return redis.call('set','x','7')", "OK", ""),
		oomProbe("return redis.call('set','y','7')", nil, oomErr+" script: "+sha("return redis.call('set','y','7')")+", on @user_script:1."),
		oomProbe(errAfterWrite, nil, "ERR user_script:1: after a write script: "+sha(errAfterWrite)+", on @user_script:1.", "k"),
		oomProbe("return {redis.pcall('hset','k','j','1')}", nil, oomErr, "k"),
		// The compat acquire takes a lease out of memory, as its first
		// write is HDEL; the compat complete of that lease is refused.
		{probe: probe{script: compatAcquire, keys: []string{"r"}, args: []any{1000, "L", 2000, "", ""}}, want: []any{int64(1), []any{"status", "IN_PROGRESS", "lease", "L", "leaseUntil", "2000", "updatedAt", "1000", "attempts", "1"}}},
		{probe: probe{script: compatComplete, keys: []string{"r"}, args: []any{"L", "", 1500, "result", ""}}, wantErr: oomErr + " script: " + sha(compatComplete) + ", on @user_script:6."},
		// Shebang scripts.
		oomProbe("#!lua\nreturn 1", nil, oomErr),
		{probe: probe{script: "#!lua\nreturn 1", sha: true}, wantErr: "NOSCRIPT No matching script. Please use EVAL."},
		oomProbe("#!lua\nreturn (", nil, oomErr),
		oomProbe("#!lua flags=allow-stale\nreturn 1", nil, oomErr),
		oomProbe("#!lua flags=bogus\nreturn 1", nil, "ERR Unexpected flag in script shebang: bogus"),
		oomProbe("#!lua flags=allow-oom\nreturn redis.call('hset',KEYS[1],'k','8')", int64(wrote), "", "k"),
		oomProbe("#!lua flags=allow-oom\nredis.call('hset',KEYS[1],'l','9') error('after a write')", nil, "ERR user_script:2: after a write script: "+sha("#!lua flags=allow-oom\nredis.call('hset',KEYS[1],'l','9') error('after a write')")+", on @user_script:2.", "k"),
		oomProbe("#!lua flags=no-writes\nreturn redis.call('hget',KEYS[1],'d')", "4", "", "k"),
		oomProbe("#!lua flags=no-writes\nreturn redis.pcall('hdel',KEYS[1],'a').err", "ERR Write commands are not allowed from read-only scripts.", "", "k"),
		oomProbe("#!lua flags=allow-oom,no-writes\nreturn redis.pcall('set','s','w').err", "ERR Write commands are not allowed from read-only scripts.", ""),
		// Scripts cached before memory ran out.
		{probe: probe{script: shebangWrite, keys: []string{"k"}, sha: true}, wantErr: oomErr},
		{probe: probe{script: compatCached, keys: []string{"k"}, sha: true}, wantErr: oomErr + " script: " + sha(compatCached) + ", on @user_script:1."},
		oomProbe("return redis.call('hgetall',KEYS[1])", []any{"cached", "1", "compat", "1", "c", "3", "d", "4", "g", "5", "i", "7", "k", "8", "l", "9"}, "", "k"),
	}
}

// TestOOMRule: the model follows the rule of oomCases, with no server.
func TestOOMRule(t *testing.T) {
	model := redismodel.New(time.Now)
	ctx := context.Background()
	for _, p := range oomSetup {
		if err := send(ctx, model, p).Err(); err != nil {
			t.Fatalf("setup %q: %v", p.script, err)
		}
	}
	model.SetOOM(true)
	for i, c := range oomCases() {
		got, err := send(ctx, model, c.probe).Result()
		if c.wantErr != "" {
			var re redis.Error
			if err == nil || err.Error() != c.wantErr || !errors.As(err, &re) {
				t.Errorf("case %d %q: got %#v, %v; want error %q", i, c.script, got, err, c.wantErr)
			}
			continue
		}
		if err != nil || !redismodel.Same(c.want, nil, got, nil) {
			t.Errorf("case %d %q: got %#v, %v; want %#v", i, c.script, got, err, c.want)
		}
	}
}

// TestOOMAgainstServer: redis-server out of memory replies to every case as
// the model does, and ends with the same keys.
func TestOOMAgainstServer(t *testing.T) {
	client := startServer(t)
	model := redismodel.New(time.Now)
	replay(t, record(t, client, oomSetup), model)
	setOOM(t, client, true)
	model.SetOOM(true)
	var probes []probe
	for _, c := range oomCases() {
		probes = append(probes, c.probe)
	}
	replayStrict(t, record(t, client, probes), model)
	setOOM(t, client, false)
	sameKeyspace(t, client, model)
}

func send(ctx context.Context, c *redismodel.Server, p probe) *redis.Cmd {
	if p.sha {
		return c.EvalSha(ctx, sha(p.script), p.keys, p.args...)
	}
	return c.Eval(ctx, p.script, p.keys, p.args...)
}
