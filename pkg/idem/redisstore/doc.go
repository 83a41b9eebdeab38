// Package redisstore is the Redis OSS and Valkey implementation of
// [idem.Store], on the go-redis v9 client.
//
// # The client
//
// The Store runs Lua scripts through [Client], the two methods of go-redis
// it needs (Eval and EvalSha), so that *redis.Client (Sentinel's
// redis.NewFailoverClient included), *redis.ClusterClient and
// redis.UniversalClient all fit, as does a wrapper of your own; New refuses
// a *redis.Ring (see Deployments). [WithWaitReplicas] needs a *redis.Client
// or a *redis.ClusterClient itself. go-redis is Redis's own Go client; it speaks to Valkey as well (the
// protocol and the scripting are the same), and it has hooks for tracing
// and metrics. valkey-go would do too, but it would be a second client in
// programs that already have go-redis, and its command builders would buy
// nothing for a few fixed scripts. Give the client ContextTimeoutEnabled:
// true, so that a request ends with its context (the Guard ends a receipt's
// with the caller's deadline) rather than only with the client's
// ReadTimeout.
//
// # The record
//
// One hash per record, under the key prefix + storage key ([DefaultPrefix]
// "idem:", [WithPrefix]), with the fields named as dynamostore's attributes:
//
//	status         IN_PROGRESS, COMPLETED, FAILED, UNKNOWN or HELD (HELD: no TTL)
//	lease          fencing token of the attempt holding the record
//	leaseUntil     Unix milliseconds; after it the record may be taken over
//	expiresAt      Unix milliseconds; the key's TTL too (PEXPIREAT)
//	attempts       incremented by every acquire (HINCRBY)
//	fingerprint    hash of the payload (absent: no check)
//	result         the result replayed to duplicates, bytes as they are
//	resultOmitted  "1" when the result was not kept
//	updatedAt      Unix milliseconds
//	lastError      what the last failed attempt left (its error's class by default)
//	released       the lease of the last attempt whose release landed (kept by acquires)
//	prevStatus     on a record an acquire took: the status it took over
//	prevLease      on a record an acquire took: the lease it took over
//	resolved       "1" on a receipt an operator wrote (Resolve, idemctl resolve --done),
//	               deleted by an acquire
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
// lease was taken over cannot overwrite the new owner's record. A FAILED
// record may be taken at once, so a release whose response was lost can be
// sent again after another attempt took the record it left: the record's
// released field, or its prevLease with a FAILED or UNKNOWN prevStatus
// (the caller's lease), shows it, and the retry succeeds
// without writing, as an own write sent again must. Powertools
// for AWS Lambda's Redis persistence layer does not fence: it completes with
// an unconditional SET and deletes a failed attempt's record with an
// unconditional DEL, so a zombie that outlived its lease overwrites or
// deletes the record of the attempt that took over.
//
// # Operators
//
// [Store.Get] reads a record, [Store.Scan] lists a namespace's (SCAN with
// MATCH on the prefix and namespace, never KEYS; every master of a
// *redis.ClusterClient), and [Store.Resolve] writes what an operator
// decided after checking downstream — a receipt without a result, marked
// [idem.Record.Resolved], or a definite failure — in one script, only if
// the record is still exactly as read (lease, status, attempts,
// updatedAt), giving a HELD record the expiry and TTL it lacked. idemctl
// (--redis-url) is built on them; the Guard never calls them.
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
// ms doubling to 400 ms): Complete until its context ends (the Guard's: the
// caller's deadline, past the lease end too, since the receipt is fenced and
// lands only if nobody took the record over), Acquire and reads up to 4
// attempts, Release 4. Every retry is the same request, and the scripts make
// it safe: a write that landed but whose response was lost is found holding
// the caller's lease and counts as the caller's own. WRONGTYPE (another
// value under the record's key) is idem.ErrInvalid. Other errors (OOM, a
// script error) are returned as they are, wrapped with the storage key; the
// Guard reports them as idem.ErrStore.
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
// # Deployments
//
// The guarantee: an effect completes at most once per key while its receipt
// is retained, and a live lease is never taken over. Redis keeps it only
// while it keeps every record it acknowledged, and it can lose one in three
// ways: a receipt lost lets a copy of the message run the effect again; a
// lease lost lets a copy run it while the first attempt still does.
//
// Eviction. Every record has a TTL, so under maxmemory every policy but
// noeviction evicts records (volatile-* ones pick them before other data).
// Set maxmemory-policy noeviction: a full server then refuses new leases
// (StoreError, nothing runs) and still lands receipts and releases (their
// scripts declare allow-oom), and no record is ever evicted.
//
// Restarts. Without persistence a restart loses every record; RDB snapshots
// alone lose what came after the last one. Set appendonly yes:
// appendfsync always survives a crash of the machine; everysec survives a
// crash of the process (its writes are in the kernel already) and loses up
// to a second or two on a crash of the machine. A primary without
// persistence that restarts on its own comes back empty, and its replicas
// copy the empty data set.
//
// Failovers. Replication is asynchronous: Redis acknowledges a write before
// any replica has it, and a failover to a replica that lacked it loses it.
// [WithWaitReplicas](n, timeout) closes that: every lease is on n replicas
// before its effect runs, every receipt before the Guard reports Executed.
// With n equal to the number of replicas, any replica that Sentinel or the
// cluster promotes has them; with fewer, only while a replica that
// acknowledged can be promoted (Sentinel and the cluster prefer the replica
// with the greatest replication offset, among equal replica-priority). An
// isolated primary cannot take leases either: no replica acknowledges. The
// price: with fewer than n replicas reachable, no new effect runs.
//
//	deployment          keeps the guarantee                      breaks otherwise
//	single node         noeviction; appendonly yes               eviction, restart: copies run again,
//	                    (fsync always, or everysec)              leases lost run twice at once
//	primary + replicas  the above on every node, and             failover: a receipt lost runs again,
//	  (Sentinel)        WithWaitReplicas(number of replicas)     a lease lost runs twice at once
//	Redis Cluster       as Sentinel, per shard (WAIT goes to     as Sentinel, per shard
//	                    the master of the record's slot)
//	*redis.Ring         never: New refuses it                    a shard that misses heartbeats has its
//	                                                             keys moved: leases taken twice at once
//
// A ring is client-side sharding over servers that do not know of each
// other: when a shard misses the ring's heartbeats, go-redis moves its keys
// to the live shards, so a record that is only out of reach reads as absent
// and a copy takes a second lease; no setting of Redis changes that.
//
// [Store.Check] reads the server's INFO and names what it finds unsafe:
// an eviction policy, a server older than 7.0, a replica written to, fewer
// replicas than WithWaitReplicas asks for ([idem.ErrInvalid]), and
// persistence off or replicas connected without WithWaitReplicas
// ([ErrNotDurable], which a caller may accept). It cannot read
// appendfsync, nor the settings of replicas, which apply once one is
// promoted, nor replicas that are not connected when it runs. DynamoDB's writes are durable and replicated when acknowledged.
//
// A Store is safe for concurrent use.
package redisstore
