// Package redisstore is the Redis OSS and Valkey implementation of
// [idem.Store], on the go-redis v9 client.
//
// # The client
//
// The Store runs Lua scripts through [Client], the two methods of go-redis
// it needs (Eval and EvalSha), so that *redis.Client, *redis.ClusterClient,
// *redis.Ring and redis.UniversalClient all fit, as does a wrapper of your
// own. go-redis is Redis's own Go client; it speaks to Valkey as well (the
// protocol and the scripting are the same), and it has hooks for tracing
// and metrics. valkey-go would do too, but it would be a second client in
// programs that already have go-redis, and its command builders would buy
// nothing for four fixed scripts. Give the client ContextTimeoutEnabled: true,
// so that a request ends with its context (the Guard ends a receipt's with the
// lease) rather than only with the client's ReadTimeout.
//
// # The record
//
// One hash per record, under the key prefix + storage key ([DefaultPrefix]
// "idem:", [WithPrefix]), with the fields named as dynamostore's attributes:
//
//	status         IN_PROGRESS, COMPLETED or FAILED
//	lease          fencing token of the attempt holding the record
//	leaseUntil     Unix milliseconds; after it the record may be taken over
//	expiresAt      Unix milliseconds; the key's TTL too (PEXPIREAT)
//	attempts       incremented by every acquire (HINCRBY)
//	fingerprint    hash of the payload (absent: no check)
//	result         the result replayed to duplicates, bytes as they are
//	resultOmitted  "1" when the result was not kept
//	updatedAt      Unix milliseconds
//	lastError      what the last failed attempt left (its error's class by default)
//
// A hash rather than one packed string: HGETALL shows an operator the record
// as it is, attempts is a server-side HINCRBY, and Complete and Release
// change a few fields without reading and rewriting the rest. Small records
// stay in Redis's compact listpack encoding; a result over 64 bytes moves
// its hash to a table, which costs a few hundred bytes more.
//
// # Requests and guarantees
//
// Acquire, Complete and Release are each one Lua script, run atomically by
// the server: one round trip each (EVALSHA; EVAL the first time on a server,
// which then caches the script). Acquire takes the record if it is absent,
// expired, FAILED, or IN_PROGRESS with a lease that ran out, and returns
// the record written; otherwise it returns the record in the way, lease and
// result included, in the same reply. So lease mode ([idem.Guard.Do]) costs
// two round trips per new message and one per duplicate, as with
// dynamostore, at a fraction of the latency.
//
// Complete and Release are fenced on the attempt's lease token: they change
// the record only if it still holds that lease, and return
// [idem.ErrLeaseLost] otherwise (for an absent record too). An attempt whose
// lease was taken over cannot overwrite the new owner's record. Powertools
// for AWS Lambda's Redis persistence layer does not fence: it completes with
// an unconditional SET and deletes a failed attempt's record with an
// unconditional DEL, so a zombie that outlived its lease overwrites or
// deletes the record of the attempt that took over.
//
// Each script touches only the one key it is given, so the Store works on
// Redis Cluster. No script reads the server's clock: times come from the
// caller (idem.Acquisition.Now and the like).
//
// # Expiry
//
// The key's TTL is the record's expiresAt (PEXPIREAT), set by Acquire and
// Complete and kept by Release. The scripts also compare expiresAt with the
// caller's now, so a record past its expiresAt counts as absent even while
// the server still holds it, as a DynamoDB item does until TTL deletes it.
// The Guard keeps expiresAt a safety margin past the lease, so a live lease
// is not evicted unless the server's clock runs ahead of the writers' by
// more than that margin. A record Redis evicted is absent: a new acquire
// starts again at attempt 1, and a late Complete gets idem.ErrLeaseLost.
//
// # Retries
//
// go-redis retries network errors and LOADING, TRYAGAIN, CLUSTERDOWN and
// the like itself (Options.MaxRetries). The Store retries such transient
// errors again on top, with capped exponential backoff and full jitter (25
// ms doubling to 400 ms): Complete until its context ends (the Guard ends it
// with the lease, never later, since after the lease another attempt may
// hold the record), Acquire and reads up to 4 attempts, Release 4. Every
// retry is the same request, and the scripts make it safe: a write that
// landed but whose response was lost is found holding the caller's lease
// and counts as the caller's own. Other errors (OOM, WRONGTYPE, a script
// error) are returned as they are, wrapped with the storage key; the Guard
// reports them as idem.ErrStore.
//
// # Limits
//
// [Store.Capabilities] declares the largest result a record keeps,
// [DefaultMaxResultSize] (1 MiB) unless [WithMaxResultSize] says otherwise,
// up to [MaxResultSizeLimit]. Redis would take 512 MB, but a duplicate's
// acquire sends the result back, and the single-threaded server copies it
// while every other client waits. Complete refuses a larger result with
// [idem.ErrResultTooLarge] before any request, and the Guard keeps the
// receipt without it. Storage keys of any length a Guard makes are kept.
//
// # No transactional mode
//
// The Store is not an [idem.TxStore]: transactional mode commits an
// effect's writes with its receipt, and Redis has no transaction with the
// writes of another system. An effect made of writes to the same Redis could
// be committed in one script, but that is a Redis data model, not this
// package's. Use lease mode, or dynamostore for effects that are DynamoDB
// writes.
//
// # What Redis must be trusted with
//
// Redis acknowledges a write before it is on disk or on a replica. A
// receipt lost to a restart without persistence, or to a failover to a
// replica that had not received it, lets a later copy of the message run the
// effect again. For receipts that must last, run Redis with AOF (appendonly
// yes, appendfsync everysec loses at most a second) and with maxmemory-policy
// noeviction: every record has a TTL, so the volatile-* policies (and the
// allkeys-* ones) would evict receipts under memory pressure, while
// noeviction makes writes fail (an error, reported as idem.ErrStore) and
// keeps every receipt. DynamoDB's writes are durable when acknowledged.
//
// A Store is safe for concurrent use.
package redisstore
