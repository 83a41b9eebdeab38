// Package redismodel is an in-memory Redis 7.0 for the simulator: a
// [Server] implements redisstore.Client (EVAL and EVALSHA) and runs the
// scripts it is sent with a Lua interpreter (gopher-lua), so that the real
// redisstore scripts run, edited or mutated as they may be, against a
// keyspace whose behaviour follows redis-server 7.0.15. The package's tests
// check it against a real redis-server, reply by reply.
//
// # What is modelled
//
//   - EVAL and EVALSHA: the script cache by SHA-1 of the whole text (EVAL
//     caches, EVALSHA of an unknown digest is NOSCRIPT), compiled once;
//     KEYS and ARGV as Redis builds them, from arguments converted as
//     go-redis sends them.
//   - Redis 7 shebangs: "#!lua" and "flags=" with no-writes, allow-oom,
//     allow-stale, no-cluster, allow-cross-slot-keys, and Redis's errors for
//     anything else. A script without one runs in compat mode.
//   - redis.call and redis.pcall of HGET, HMGET, HGETALL, HEXISTS, HLEN, HSET,
//     HINCRBY, HDEL, GET, SET (with its options), DEL, EXISTS, PEXPIREAT,
//     PEXPIRE (with NX, XX, GT, LT), PERSIST, PTTL, TYPE and INFO, with
//     Redis's arity checks, argument errors, WRONGTYPE, and the flags of
//     Redis 7's command table that scripts feel: write and denyoom. Any other
//     command is unknown. redis.error_reply, redis.status_reply,
//     redis.sha1hex and redis.log (which logs nothing) too.
//   - The conversions of Redis 7.0 between Lua and replies (the script's
//     side speaks RESP2), and then go-redis v9's view of a reply on its
//     default RESP3 connection: int64, string, []any, float64 for a script's
//     {double=...}, redis.Nil, and error replies as errors that satisfy
//     redis.Error. A typed error (OOM, LOADING...) nested in an array fails
//     the whole reply, as go-redis v9.22's reader does.
//   - Script errors as Redis 7.0 words them: "ERR user_script:1: ... script:
//     <sha>, on @user_script:1." for what Lua raised, the error reply itself
//     (OOM, WRONGTYPE...) and the same position for what redis.call raised,
//     and "ERR Error compiling script (new function): ...".
//   - Read-only globals and libraries (reading an unknown global is an
//     error, as is writing any), Redis 7's pcall (which catches what
//     redis.call raises as its message), Lua 5.1's error and tonumber where
//     gopher-lua's differ, and math.random drawing Redis's own rand48
//     sequence, one per server from its start.
//   - Key expiry by the server's clock, given to New and read once per
//     request (Redis freezes time during a script): a key is gone once its
//     deadline is strictly before now, lazily; a PEXPIREAT at or before now
//     deletes the key at once.
//   - Out of memory with maxmemory-policy noeviction ([Server.SetOOM]),
//     which the tests check against redis-server 7.0.15 with maxmemory 1:
//     EVAL or EVALSHA of a shebang script whose flags include neither
//     allow-oom nor no-writes is refused before it runs (and an EVAL of it is
//     not cached) with "OOM command not allowed when used memory >
//     'maxmemory'."; a compat-mode script runs, and its redis.call of a
//     denyoom command (HSET, HINCRBY, SET) fails with that error as long as
//     the script has not yet called a write command. A write command counts
//     once it passes the script's checks (known command, arity, no-writes,
//     OOM), even if it then fails or changes nothing (an HDEL of a missing
//     field, a WRONGTYPE): from then on Redis cannot refuse the script, whose
//     writes so far it could not undo. Nothing is rolled back.
//   - Recording ([Server.SetRecorder], [Recording]) and replaying
//     ([Replay]) requests, to check a schedule's requests against a real
//     server (a [Call] whose Script is empty is an EVALSHA, so an EVAL of
//     the empty script replays as one); [Server.Dump] and [Server.Hash] for
//     an oracle; [Server.FlushScripts] for a restart's empty script cache.
//
// # What is not
//
// Commands other than those above, and any request but EVAL and EVALSHA
// (no SCRIPT LOAD, no FUNCTION, no EVAL_RO). RESP3 (redis.setresp), the
// bit, cjson, cmsgpack and struct libraries, coroutines, loadstring.
// Memory accounting, eviction and maxmemory itself (the policy only shows
// in INFO), persistence, replication, cluster, and a script's time limit (a
// script that loops forever hangs the model). The wording of Lua's own
// runtime errors (gopher-lua's "attempt to..." texts differ from Lua 5.1's)
// and of compile errors; tostring and concatenation of non-integral numbers
// (gopher-lua prints them as Go does, Lua 5.1 with "%.14g"). Redis 7.0.15
// crashes on error({}); the model replies an error with no message. The
// order of a large hash's fields: Redis moves a hash past 128 fields or a
// value past 64 bytes to a hash table ordered by a seeded hash, while the
// model keeps insertion order, as Redis does for small hashes; [Same]
// compares such replies as sets of pairs.
//
// A Server is deterministic and safe for concurrent use: requests run one
// at a time under a mutex, on one Lua state, as on Redis.
package redismodel
