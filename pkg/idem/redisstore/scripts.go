package redisstore

import (
	"context"
	"crypto/sha1"
	"encoding/hex"

	"github.com/redis/go-redis/v9"
)

// The Store's requests are Lua scripts: a script runs atomically on the
// server, so each decision and its write are one request, one round trip.
// Every script touches exactly the one key it is given, KEYS[1], so that it
// runs on Redis Cluster too. None reads the server's clock: times come from
// the caller, in Unix milliseconds, and the server's clock only evicts keys
// at their TTL.
//
// The record is a hash whose fields are named as dynamostore's attributes
// (see codec.go and the package documentation).

// acquireLua takes the record if it is absent, expired, FAILED, UNKNOWN, or
// IN_PROGRESS with a lease that ran out (never HELD), as idemtest's
// MemoryStore does, keeping the taken record's status as prevStatus (none
// for an expired one, which counts as absent) and its lastError as it was, and
// returns {1, the record written}; otherwise it writes nothing and returns
// {0, the record in the way}, lease included, so that a duplicate, a
// conflict and a retried acquire whose first request landed all cost one
// round trip. attempts is incremented from whatever the record held, even an
// expired one that TTL has not evicted yet, as DynamoDB's ADD does.
//
// A record in the way that holds the caller's own lease is this very
// acquisition's earlier write, whose response was lost: its lease field is
// written again (the same value), so that the retry propagates a write and a
// WAIT after it on the retry's connection (WithWaitReplicas) covers the
// earlier one. In Valkey (9.1, tested) and newer Redis, WAIT counts only the
// writes of its own connection, and would otherwise return at once on a new
// one; Redis 7.0 counts up to the server's offset after any command.
//
// ARGV: now, lease, leaseUntil, expiresAt ("" for none), fingerprint ("" for
// none).
//
// The shebang (Redis 7) makes the server refuse the script before it runs
// when it is out of memory (maxmemory with noeviction): no lease is taken
// that its receipt could not follow. Without it, Redis checks memory only
// at a script's first write, and only if that command can grow memory:
// this script's first write is HDEL, which cannot, and after a first write
// Redis lets every other write of the script through.
const acquireLua = `#!lua
local key, now = KEYS[1], tonumber(ARGV[1])
local f = redis.call('HMGET', key, 'status', 'leaseUntil', 'expiresAt', 'lease')
local status, leaseUntil, expiresAt = f[1], tonumber(f[2]), tonumber(f[3])
local takeable = not status
	or (expiresAt ~= nil and expiresAt < now)
	or status == 'FAILED' or status == 'UNKNOWN'
	or (status == 'IN_PROGRESS' and (leaseUntil == nil or leaseUntil < now))
if not takeable then
	if status == 'IN_PROGRESS' and f[4] == ARGV[2] then
		redis.call('HSET', key, 'lease', ARGV[2])
	end
	return {0, redis.call('HGETALL', key)}
end
redis.call('HDEL', key, 'result', 'resultOmitted', 'fingerprint', 'expiresAt', 'prevStatus', 'prevLease', 'resolved')
-- An expired record counts as absent: nothing taken over.
if status and not (expiresAt ~= nil and expiresAt < now) then
	redis.call('HSET', key, 'prevStatus', status)
end
if f[4] then
	redis.call('HSET', key, 'prevLease', f[4])
end
redis.call('HSET', key, 'status', 'IN_PROGRESS', 'lease', ARGV[2], 'leaseUntil', ARGV[3], 'updatedAt', ARGV[1])
redis.call('HINCRBY', key, 'attempts', 1)
if ARGV[5] ~= '' then
	redis.call('HSET', key, 'fingerprint', ARGV[5])
end
if ARGV[4] ~= '' then
	redis.call('HSET', key, 'expiresAt', ARGV[4])
end
local rec = redis.call('HGETALL', key)
-- Last: an expiry the server's clock already passed deletes the key at
-- once, and the reply must still be the record written.
if ARGV[4] ~= '' then
	redis.call('PEXPIREAT', key, ARGV[4])
else
	redis.call('PERSIST', key)
end
return {1, rec}
`

// completeLua marks the record COMPLETED if the caller's lease still holds
// it (fencing), and returns 1; otherwise, absent record included, it writes
// nothing and returns 0. It keeps attempts and the lease, so that the same
// completion sent again succeeds again.
//
// ARGV: lease, expiresAt ("" for none), updatedAt, result ("" for none),
// resultOmitted ("1" or "").
//
// allow-oom: a receipt is written even when the server is out of memory
// (noeviction). Its lease was taken before memory ran out, and the effect
// has run: refusing the receipt could only make a copy run it again. It
// exceeds maxmemory by one record at most; new leases are refused.
const completeLua = `#!lua flags=allow-oom
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

// releaseLua marks the record FAILED, UNKNOWN or HELD, fenced like
// completeLua, and keeps the lease as released, which no other script
// changes. The expiry and the TTL stay as they are, but for HELD, which
// loses both: nothing held is deleted silently.
//
// A FAILED record may be taken at once, so a release whose response was
// lost can be sent again after another attempt took the record it left:
// the fence fails, but released still names the caller's lease, so the
// release is the caller's own, and it returns 1 without writing.
//
// ARGV: lease, updatedAt, lastError ("" for none), status.
//
// allow-oom, as completeLua: a failed attempt's release lets the next
// delivery run at once.
const releaseLua = `#!lua flags=allow-oom
local key = KEYS[1]
local f = redis.call('HMGET', key, 'lease', 'released', 'prevLease', 'prevStatus')
if f[1] ~= ARGV[1] then
	if f[2] == ARGV[1] or (f[3] == ARGV[1] and (f[4] == 'FAILED' or f[4] == 'UNKNOWN')) then
		return 1
	end
	return 0
end
redis.call('HSET', key, 'status', ARGV[4], 'updatedAt', ARGV[2], 'released', ARGV[1])
if ARGV[3] ~= '' then
	redis.call('HSET', key, 'lastError', ARGV[3])
else
	redis.call('HDEL', key, 'lastError')
end
if ARGV[4] == 'HELD' then
	redis.call('HDEL', key, 'expiresAt')
	redis.call('PERSIST', key)
end
return 1
`

// resolveLua writes what an operator decided (Store.Resolve, idemctl
// resolve) if the record is still exactly as the operator read it — lease
// (the fencing token), status, attempts, updatedAt — and returns {1, the
// record written}; otherwise it writes nothing and returns {0, the record
// as it is now}, {0, {}} when it is gone. The lease alone, which fences
// completeLua and releaseLua, is not enough here: an attempt that
// outlived its lease still holds the token, and its late receipt keeps it
// while changing the status.
//
// COMPLETED is a receipt without a result, flagged resolved, under the
// lease ARGV[6], a new token of the operator's, so that a late release of
// the attempt cannot undo it; FAILED keeps the token (ARGV[6] is the old
// one) and writes lastError. A record without an expiry (HELD: no TTL)
// gets ARGV[8], as expiresAt and as its TTL, so that nothing settled stays
// for ever; one with an expiry keeps it.
//
// ARGV: old lease, old status, old attempts, old updatedAt (each "" for
// none), status to write, lease to write, updatedAt, expiresAt for a record
// without one, lastError (FAILED).
//
// allow-oom: settling a held key is how its memory is ever freed, and an
// operator who cannot settle it under noeviction could do nothing.
const resolveLua = `#!lua flags=allow-oom
local key = KEYS[1]
local f = redis.call('HMGET', key, 'lease', 'status', 'attempts', 'updatedAt', 'expiresAt')
if not f[2] then
	return {0, {}}
end
if (f[1] or '') ~= ARGV[1] or f[2] ~= ARGV[2] or (f[3] or '') ~= ARGV[3] or (f[4] or '') ~= ARGV[4] then
	return {0, redis.call('HGETALL', key)}
end
redis.call('HSET', key, 'status', ARGV[5], 'lease', ARGV[6], 'updatedAt', ARGV[7])
if ARGV[5] == 'COMPLETED' then
	redis.call('HSET', key, 'resultOmitted', '1', 'resolved', '1')
	redis.call('HDEL', key, 'result', 'lastError')
else
	redis.call('HSET', key, 'lastError', ARGV[9])
end
if not f[5] then
	redis.call('HSET', key, 'expiresAt', ARGV[8])
end
local rec = redis.call('HGETALL', key)
-- Last, as in acquireLua: an expiry already past deletes the key at once.
if not f[5] then
	redis.call('PEXPIREAT', key, ARGV[8])
end
return {1, rec}
`

// getLua reads the record, expired or not. A script rather than HGETALL so
// that the Store needs nothing of the client but Eval and EvalSha.
const getLua = `#!lua flags=no-writes
return redis.call('HGETALL', KEYS[1])`

// script is a Lua script and its SHA-1, under which the server caches it.
type script struct{ src, sha string }

func newScript(src string) script {
	sum := sha1.Sum([]byte(src))
	return script{src: src, sha: hex.EncodeToString(sum[:])}
}

var (
	acquireScript  = newScript(acquireLua)
	completeScript = newScript(completeLua)
	releaseScript  = newScript(releaseLua)
	getScript      = newScript(getLua)
	resolveScript  = newScript(resolveLua)
)

// eval runs sc on key (see evalOn).
func (s *Store) eval(ctx context.Context, sc script, key string, args ...any) (any, error) {
	return evalOn(ctx, s.client, sc, []string{key}, args...)
}

// evalOn runs sc with EVALSHA, and with EVAL when the server does not have
// it cached (NOSCRIPT: the first call on a server, or after a restart, a
// failover or SCRIPT FLUSH), which caches it. So a script costs one round
// trip, and two the first time on each server. It is what go-redis's
// Script.Run does, with only the two methods of [Client].
func evalOn(ctx context.Context, c Client, sc script, keys []string, args ...any) (any, error) {
	v, err := c.EvalSha(ctx, sc.sha, keys, args...).Result()
	if redis.HasErrorPrefix(err, "NOSCRIPT") {
		v, err = c.Eval(ctx, sc.src, keys, args...).Result()
	}
	return v, err
}
