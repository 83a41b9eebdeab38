// Command idemctl is the operator's tool for an exactly-once SQS consumer
// built with github.com/exactlyonce/sqsidem: it answers "did key K's effect
// happen, and what do I do now", and redrives a dead-letter queue without
// creating a second effect. RUNBOOK.md says what to run for each alarm of
// the infra/exactlyonce construct.
//
//	go install ./cmd/idemctl          # from a checkout of the repository
//	go install github.com/exactlyonce/sqsidem/cmd/idemctl@latest   # a release (see go.mod)
//
// # Finding the consumer
//
// With --stack NAME, idemctl reads the stack's outputs that the
// exactlyonce construct adds (consumer.Output*): the receipt table, the
// queue, the dead-letter queue, the idem namespace and the key field
// (<id>ReceiptTableName, <id>Namespace, <id>Key; until v0.4.0 also the
// names of a stack deployed before v0.3.0, consumer.LegacyOutput*). A
// stack with several consumers needs --consumer ID (the construct id; the
// outputs of the id "Default" have no prefix). Flags give the same without
// a stack and win over the outputs: --table, --namespace (default
// "consumer", the runtime's), --queue-url, --dlq-url, --key-field (the
// message attribute, else the body's JSON field, holding the key, as
// consumer.KeyField reads it). --plain-keys for a consumer that stores
// keys unhashed (idem.WithPlainKeys); --partition-value for a table with a
// sort key (dynamostore.WithCompositeKey).
//
// # A Redis store
//
// For a consumer whose receipts are in Redis (IDEM_STORE=redis), pass
// --redis-url redis://… (or rediss://…), by default the IDEM_REDIS_URL
// of the environment, the consumer's own variable; --redis-prefix if the
// consumer's redisstore has another prefix than "idem:". idemctl then
// connects to that one node as the consumer's runtime does, and needs no
// AWS for inspect, list, resolve and stats; with --stack or --queue-url
// and --dlq-url, inspect's DLQ part, redrive and stats' queues work as on
// a table. --table and a Redis URL name two stores and are refused
// together (--redis-url= clears IDEM_REDIS_URL); a stack's table output
// is not used when a Redis URL is given. list and stats read the namespace
// with SCAN (MATCH on the prefix and namespace, never KEYS), a page at a
// time, without --segments. resolve writes with one Lua script, on the same
// condition as on a table, and gives a held key's record the TTL it lacked
// (PEXPIREAT). Every key of the namespace on that node is read; for a
// cluster, use redisstore.Store.Scan and Resolve from Go with a
// *redis.ClusterClient.
//
// AWS access follows the AWS CLI: --profile, --region, the default
// credential chain, AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE>
// (DYNAMODB, SQS, CLOUDFORMATION, CLOUDWATCH), or --endpoint-url for all.
// Credentials are checked before any request.
//
// # Commands
//
//	inspect KEY...             a key's record and what it means, its message in the DLQ and what redrive does with it
//	list [--status S]          the namespace's records in one state (parallel scan)
//	resolve KEY --done|--not-done   write the receipt, or release the record, after checking downstream
//	redrive [--dry-run]        sort the DLQ: delete what is done, send back what is not, leave the rest
//	stats                      records by state, queue depths, the age of the oldest messages
//
// Keys are hashed as the consumer's Guard hashes them (Guard.StorageKey);
// with --storage-key, inspect and resolve take the storage key itself, as
// list prints it and the consumer logs it (storage_key). States: completed,
// in-progress (lease live), unconfirmed (in progress, lease ended: the
// effect may have run and nobody confirmed it), failed (a definite
// failure: the effect did not take place), unknown (the last attempt's
// effect failed without saying whether it took place: the next delivery
// reconciles, or follows the consumer's policy), held (an unknown outcome
// that could not be reconciled, parked by the consumer's hold policy: no
// delivery runs it and it never expires until an operator settles it with
// resolve), expired (past retention: counts as absent), absent.
//
// A message in the DLQ is not delivered again by itself: for a key whose
// message inspect finds there, it says what redrive does with it instead
// (sorted as redrive sorts it, with redrive's defaults). inspect reads the
// DLQ by receiving, and SQS counts every receive, so a message's receive
// count holds the consumer's receives, this read, and every earlier read
// of the DLQ (inspect, stats, redrive, the console); inspect subtracts its
// own and shows the rest as a bound: at most so many by the consumer.
//
// resolve reads the record, shows it, asks (on a terminal, unless --yes)
// and writes on the condition that the record is still what it read:
// same lease token, status, attempts and update time. It refuses a live
// lease, an expired or absent record, and releasing a receipt. It settles
// a held or unknown record either way: --done writes the receipt, with no
// result and marked resolved (a copy's Duplicate reports
// idem.Result.Resolved: an operator, not the effect, wrote it), under a
// token of its own so that a late release of the attempt that held the
// record cannot undo it; --not-done a definite failure (FAILED), which the
// next copy runs without reconciling. The write is the store's own
// (dynamostore.Store.Resolve, redisstore.Store.Resolve), so two resolves
// at once write once, and one that meets a record an attempt changed
// writes nothing. A record without an expiry (a held one) gets --retention
// (default the consumer's, 7 days) from now.
//
// redrive reads the DLQ, hiding each message for --hold while it decides,
// and sorts each by its key's record: done (a receipt with the same
// payload fingerprint, idem.Fingerprint of the body) is deleted; not done
// (no record, a FAILED or UNKNOWN one with fewer attempts than
// --max-attempts, default the queue's maxReceiveCount, or an expired
// FAILED or UNKNOWN one; the next delivery of an UNKNOWN key reconciles)
// is sent back to the queue with its body and attributes, then deleted
// from the DLQ; malformed (no key), poison (failed every time it ran, or a
// receipt with another payload), unconfirmed, in-progress, held (until
// resolve settles it: sent back, it would only fail again), a second copy
// of a key already going back in this run, and a message without a record
// but older than --retention (its receipt may have expired) are left, with
// the reason. Messages left are made visible again at the end.
//
// # Personal data
//
// Message bodies are printed only with --show-bodies. Business keys are
// printed only where the operator typed them; storage keys are hashes,
// except with --plain-keys, where list and redrive show only their length
// unless --show-keys.
//
// # Output
//
// --output table (default) is for people; --output json is one JSON
// document per run, whose fields are only ever added to. On a Redis store
// "redis" (the URL without its password) stands where "table" does:
//
//	inspect  {table, namespace, now, dlq: {url, checked, complete, messagesRead, note}, keys: [record]}
//	list     {table, namespace, now, status, olderThanSeconds, matched, records: [record]}
//	resolve  {table, namespace, now, decision, written, note, before: record, after: record}
//	redrive  {table, namespace, queue, dlq, now, dryRun, maxAttempts, complete,
//	          messages: [{messageId, storageKey, class, action, done, reason, error, body}], counts: {...}}
//	stats    {table, namespace, now, records: {completed, in-progress, unconfirmed, failed, unknown, held, expired, total},
//	          queue|dlq: {url, visible, inFlight, delayed, oldestAgeSeconds, oldestSource, oldestNote}}
//
//	record   {key, storageKey, state, meaning, status, prevStatus, attempts, leaseUntil, leaseLeftSeconds,
//	          lastError, lastErrorNote, resultBytes, resultOmitted, resolved, expiresAt, retentionLeftSeconds, updatedAt,
//	          dlqMessages: [{messageId, sentAt, receives, idemctlReceives, consumerReceivesAtMost, body,
//	                         redrive: {class, action, reason}}]}
//
// Times are RFC 3339 in UTC; a field without a value is left out. key
// appears only when typed, body only with --show-bodies. lastError is as
// stored: the class the effect named with idem.Classify, or else the Go
// types of its error ("*errors.errorString"), which lastErrorNote then
// says, since the reason is only in the consumer's log. prevStatus is the
// status of the record the last attempt took over (UNKNOWN or IN_PROGRESS:
// an unknown outcome it reconciles first); on a record in progress,
// lastError is still that earlier attempt's. A held record has no
// expiresAt. resolved marks a receipt resolve --done wrote. receives is SQS's
// ApproximateReceiveCount as read, idemctlReceives this run's receives
// among it, consumerReceivesAtMost the rest (absent when SQS gave no
// count): earlier reads of the DLQ are in it too. redrive is what
// `idemctl redrive` does with the message (inspect only). redrive's counts
// are by class (done, not-done, malformed, poison, unconfirmed,
// in-progress, held, copy, too-old), by planned action (move, delete, leave) and by what
// was done (moved, deleted, failed). stats' oldestSource is "cloudwatch"
// (ApproximateAgeOfOldestMessage), "peek" (the oldest SentTimestamp read
// from the DLQ) or "none"; the source queue is never received from.
//
// # Exit codes
//
//	0  done, and resolve with nothing to write (already completed, already released)
//	1  an error at run time: an unknown stack, table or queue, a Redis that does
//	   not answer; a KEY without a
//	   record (inspect, after printing every key; resolve); a table that is not
//	   a receipt table, a DLQ that is not the queue's or cannot be read; no
//	   credentials, an AWS error; a write refused, a record that changed, the
//	   operator answering no. Nothing is written, except by redrive, which
//	   exits 1 when a move or delete failed or the run stopped, after printing
//	   what it did.
//	2  a wrong command line, with nothing written: an unknown command or flag,
//	   a bad value, no KEY, a resource idemctl cannot find without a flag
//	   (--stack, --table, --queue-url, --dlq-url, --key-field, --consumer,
//	   --partition-value), --table with a Redis URL, a Redis URL that is not
//	   one, resolve without --yes when stdin is not a terminal.
//
// Every error is one line on stderr. inspect with a KEY without a record,
// and redrive, print their whole output before they exit 1.
package main
