package redismodel_test

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/integration/sim/redismodel"
)

func sha(script string) string {
	sum := sha1.Sum([]byte(script))
	return hex.EncodeToString(sum[:])
}

func eval(script string, keys ...string) probe { return probe{script: script, keys: keys} }

// far is a deadline far past any test's clock, so that no key expires
// while the real server and the model are compared.
var far = time.Now().Add(100 * 365 * 24 * time.Hour).UnixMilli()

// scriptProbes exercise the model's Lua: conversions both ways, errors and
// their texts, globals, shebangs, commands and their argument checks. Each
// runs on a fresh real server and on a fresh model, in this order.
func scriptProbes() []probe {
	ps := []probe{
		// Redis's rand48 sequence starts with the server.
		eval("return {math.random(1000), math.random(1000), math.floor(math.random()*1e9), math.random(5,7)}"),
		eval("math.randomseed(42) return {math.random(1000), math.floor(math.random()*1e9)}"),
		// Lua to reply.
		eval("return 3.99"), eval("return -3.99"), eval("return 1e20"), eval("return -1e20"), eval("return 0/0"),
		eval("return {1,2,nil,3}"), eval("return {1,'a',false,3}"), eval("return true"), eval("return false"),
		eval("return nil"), eval("return print"), eval("return {}"), eval("return 'a\\0b'"),
		eval("return {ok='x', err='y'}"), eval("return {err=5}"), eval("return {ok=5}"), eval("return {ok='x'}"),
		eval("return {1,{2,{3}},true}"), eval("return {double=1.5}"), eval("return {double=1/0}"),
		eval("return {err='a\\r\\nb'}"), eval("return {ok='a\\r\\nb'}"), eval("return {err='plain'}"),
		eval("return {1, {err='FOO nested'}, {ok='s'}}"), eval("return {1, {err='OOM nested'}}"),
		eval("return redis.status_reply('HI')"), eval("return redis.error_reply('plain')"),
		eval("return redis.error_reply('-X y')"), eval("return redis.error_reply('X y')"),
		eval("return redis.error_reply(5)"), eval("return redis.status_reply()"),
		// Reply to Lua.
		eval("return type(redis.call('set','q','1'))"), eval("return redis.call('set','q','1').ok"),
		eval("return redis.call('get','nokey') == false"), eval("local t = redis.pcall('nosuch') return t.err"),
		eval("return redis.call('hgetall','nokey')"), eval("return redis.call('hmget','nokey','a','b')"),
		eval("return {redis.call('hmget','nokey','a')[1] == false, #redis.call('hmget','nokey','a','b')}"),
		eval("local r = redis.pcall('hget','q','f') return {type(r), r.err}"),
		// Numbers as command arguments: "%.17g".
		eval("redis.call('set','n',0.1) return redis.call('get','n')"),
		eval("redis.call('set','n',1e20) return redis.call('get','n')"),
		eval("redis.call('set','n',-0.0) return redis.call('get','n')"),
		eval("redis.call('set','n',1/0) return redis.call('get','n')"),
		eval("redis.call('set','n',2^53) return redis.call('get','n')"),
		eval("redis.call('set','n',123) return redis.call('get','n')"),
		// Errors Lua raises, and their positions.
		eval("return foo"), eval("x = 1 return x"), eval("redis.foo = 1 return 1"), eval("string.x = 1 return 1"),
		eval("error('boom')"), eval("error('x', 0)"), eval("error({err='X boom'})"), eval("error('a\\nb')"),
		eval("local function f() error('x', 2) end\nf()"), eval("\n\nerror('third line')"),
		eval("error()"), eval("error(nil)"), eval("error(5)"), eval("local a = nil; return a + 1"),
		eval("return 1 < nil"), eval("return (", "k"), eval("x = = 1"), eval("return math.random(0)"),
		eval("return pcall(error, 'caught')"), eval("return {pcall(redis.call, 'nosuch')}"),
		eval("local ok, e = pcall(redis.call, 'hget', 'q', 'f') return e.err"),
		// redis.call's and the commands' own errors.
		eval("return redis.call('hset','h')"), eval("return redis.pcall('hset','h')"),
		eval("return redis.pcall('hset','h','a')"), eval("return redis.pcall('hset','h','a','b','c')"),
		eval("return redis.call('hget','q','f')"), eval("return redis.pcall('hget','q','f')"),
		eval("return redis.call('nosuch')"), eval("return redis.pcall('NoSuch')"),
		eval("return redis.call()"), eval("return redis.pcall()"), eval("return redis.call({})"),
		eval("return redis.call('get',{})"), eval("return redis.call('get',nil)"), eval("return redis.pcall('get',true)"),
		eval("\nlocal x = 1\nreturn redis.call('hget','q','f')"),
		// Hashes.
		eval("return redis.call('hset',KEYS[1],'a','1','b','2','a','3')", "h"),
		eval("return redis.call('hgetall',KEYS[1])", "h"),
		eval("return {redis.call('hget',KEYS[1],'a'), redis.call('hget',KEYS[1],'z')}", "h"),
		eval("return redis.call('hmget',KEYS[1],'a','z','b')", "h"),
		eval("return {redis.call('hexists',KEYS[1],'a'), redis.call('hexists',KEYS[1],'z'), redis.call('hlen',KEYS[1]), redis.call('hlen','none')}", "h"),
		eval("return {redis.call('hincrby',KEYS[1],'c',5), redis.call('hincrby',KEYS[1],'c',-7), redis.call('hincrby',KEYS[1],'d',1)}", "h"),
		eval("return redis.pcall('hincrby',KEYS[1],'a','x')", "h"), eval("return redis.pcall('hincrby',KEYS[1],'a',1.5)", "h"),
		eval("return redis.pcall('hincrby',KEYS[1],'a','+1')", "h"), eval("return redis.pcall('hincrby',KEYS[1],'a','01')", "h"),
		eval("redis.call('hset',KEYS[1],'s','x') return redis.pcall('hincrby',KEYS[1],'s',1)", "h"),
		eval("redis.call('hset',KEYS[1],'m','9223372036854775807') return redis.pcall('hincrby',KEYS[1],'m',1)", "h"),
		eval("return {redis.call('hdel',KEYS[1],'a','z','s'), redis.call('hgetall',KEYS[1])}", "h"),
		eval("return {redis.call('hdel','none','a'), redis.pcall('hdel','q','a')}", "h"),
		eval("redis.call('hset',KEYS[1],'x','1') return {redis.call('hdel',KEYS[1],'x'), redis.call('exists',KEYS[1])}", "h2"),
		eval("return {redis.call('hset','ord','z','1','a','2','m','3'), redis.call('hdel','ord','a'), redis.call('hset','ord','a','4','z','5'), redis.call('hgetall','ord')}"),
		// Strings and keys.
		eval("return {redis.call('set','s','v','NX'), redis.call('set','s','w','XX'), redis.call('get','s')}"),
		eval("return {redis.call('set','s','x','GET'), redis.call('set','new','x','XX','GET'), redis.call('set','s','y','NX','GET')}"),
		eval("return redis.pcall('set','s','v','NX','XX')"), eval("return redis.pcall('set','s','v','EX')"),
		eval("return redis.pcall('set','s','v','EX','0')"), eval("return redis.pcall('set','s','v','PX','x')"),
		eval("return redis.pcall('set','s','v','EX','1','PX','1')"), eval("return redis.pcall('set','s','v','KEEPTTL','EX','5')"),
		eval("return redis.pcall('set','h','v','GET')"), eval("return redis.pcall('get','h')"),
		eval("return redis.pcall('set','s','v','EX','9223372036854775807')"),
		eval("return {redis.call('set','e','v','PXAT',ARGV[1]), redis.call('pttl','e') > 0, redis.call('set','e','w','KEEPTTL'), redis.call('pttl','e') > 0, redis.call('set','e','z'), redis.call('pttl','e')}"),
		eval("return {redis.call('set','p','v','EXAT','1'), redis.call('get','p'), redis.call('exists','p')}"),
		eval("return {redis.call('exists','s','s','none','h'), redis.call('del','s','none','s'), redis.call('exists','s')}"),
		eval("return {redis.call('type','h'), redis.call('type','q'), redis.call('type','none')}"),
		// Expiry.
		eval("return {redis.call('pttl','h'), redis.call('pttl','none'), redis.call('persist','h'), redis.call('persist','none')}"),
		eval("return {redis.call('pexpireat','h',ARGV[1]), redis.call('pttl','h') > 0, redis.call('persist','h'), redis.call('pttl','h')}", "h"),
		eval("return {redis.call('pexpireat','h',ARGV[1],'NX'), redis.call('pexpireat','h',ARGV[1],'NX'), redis.call('pexpireat','h',ARGV[1]-1,'GT'), redis.call('pexpireat','h',ARGV[1]+1,'GT'), redis.call('pexpireat','h',ARGV[1]+2,'LT'), redis.call('pexpireat','h',ARGV[1],'lt'), redis.call('pexpireat','h',ARGV[1],'XX')}", "h"),
		eval("return {redis.pcall('pexpireat','h','1','NX','XX'), redis.pcall('pexpireat','h','1','GT','LT'), redis.pcall('pexpireat','h','1','BAD'), redis.pcall('pexpireat','h','x'), redis.pcall('pexpireat','none','1')}"),
		eval("return {redis.pcall('pexpire','h','9223372036854775807'), redis.call('pexpire','h','100000000'), redis.call('pttl','h') > 0}"),
		eval("return {redis.call('pexpireat','h','1'), redis.call('exists','h'), redis.call('hgetall','h')}"),
		eval("return {redis.call('pexpire','q','-5'), redis.call('exists','q')}"),
		eval("return {redis.call('persist','e'), redis.call('pexpireat','e','1','LT'), redis.call('exists','e')}"),
		// INFO.
		eval("local i = redis.call('info') return {i:find('redis_version:7.0.15', 1, true) ~= nil, i:find('maxmemory_policy:noeviction', 1, true) ~= nil, i:find('aof_enabled:0', 1, true) ~= nil}"),
		eval("local i = redis.call('INFO', 'Memory') return {i:find('maxmemory_policy:', 1, true) ~= nil, i:find('redis_version', 1, true) == nil}"),
		eval("return redis.call('info','nosuchsection')"),
		// Globals and libraries.
		eval("return {tonumber(' 10 '), tonumber('0x10'), tonumber('1e3'), tonumber('x') == nil}"),
		eval("return {#KEYS, KEYS[2], #ARGV, ARGV[1]}", "k1", "k2"),
		eval("return {redis.REDIS_VERSION, redis.REDIS_VERSION_NUM, redis.sha1hex(''), redis.LOG_WARNING, _VERSION}"),
		eval("redis.log(redis.LOG_NOTICE, 'hello') return {type(_G), type(redis.call), string.format('%d-%s', 3, 'x'), table.concat({'a','b'}, ',')}"),
		eval("local t = {} t.x = 1 return t.x"), eval("return type(os)"), eval("return rawget(_G, 'zz') == nil"),
		// Shebangs.
		eval("#!lua flags=bogus\nreturn 1"), eval("#!python\nreturn 1"), eval("#!lua"), eval("#!lua foo=bar\nreturn 1"),
		eval("#!lua flags=\nreturn 1"), eval("#!lua flags=no-writes,allow-oom\nreturn 1"), eval("#!lua   flags=no-writes  \nreturn 1"),
		eval("#!lua\nerror('x')"), eval("#! lua\nreturn 1"), eval("#!lua flags=no-writes,\nreturn 1"),
		eval("#!lua flags=no-writes\nreturn redis.call('set','a','b')"), eval("#!lua flags=no-writes\nreturn redis.pcall('del','a')"),
		eval("#!lua flags=no-writes\nreturn redis.pcall('hget','q','f')"), eval("#!lua flags=no-writes\nreturn redis.call('get','q')"),
		eval("#!lua\r\nreturn 1"), eval("#!lua flags=allow-stale,no-cluster,allow-cross-slot-keys\nreturn redis.call('set','a','c')"),
		eval("#!lua flags=no-writes\nreturn redis.pcall('nosuch')"),
		// The script cache.
		{script: "return 'never sent'", sha: true},
		{script: "return 'cached'"}, {script: "return 'cached'", sha: true},
		{script: strings.ToUpper(sha("return 'cached'")), sha: true},
		{script: "return (", sha: true}, {script: "#!lua flags=bogus\nreturn 1", sha: true},
		// Arguments as go-redis sends them.
		{script: "return ARGV", args: []any{1, int64(-2), uint8(3), []byte("b"), "s", true, false, 1.5, nil, 2 * time.Second}},
	}
	for i := range ps {
		if strings.Contains(ps[i].script, "ARGV[1]") && ps[i].args == nil {
			ps[i].args = []any{far}
		}
	}
	return ps
}

// TestScripts: the model replies to every probe as redis-server does, and
// ends with the same keyspace.
func TestScripts(t *testing.T) {
	client := startServer(t)
	calls := record(t, client, scriptProbes())
	model := redismodel.New(time.Now)
	replayStrict(t, calls, model)
	sameKeyspace(t, client, model)
	t.Logf("%d probes compared", len(calls))
}
