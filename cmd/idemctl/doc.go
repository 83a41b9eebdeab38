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
// queue, the dead-letter queue, the idem namespace and the key field. A
// stack with several consumers needs --consumer ID (the construct id; the
// outputs of the id "Default" have no prefix). Flags give the same without
// a stack and win over the outputs: --table, --namespace (default
// "consumer", the runtime's), --queue-url, --dlq-url, --key-field (the
// message attribute, else the body's JSON field, holding the key, as
// consumer.KeyField reads it). --plain-keys for a consumer that stores
// keys unhashed (idem.WithPlainKeys); --partition-value for a table with a
// sort key (dynamostore.WithCompositeKey).
//
// AWS access follows the AWS CLI: --profile, --region, the default
// credential chain, AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE>
// (DYNAMODB, SQS, CLOUDFORMATION, CLOUDWATCH), or --endpoint-url for all.
// Credentials are checked before any request.
//
// # Commands
//
//	inspect KEY...             a key's record and what it means, and its message in the DLQ
//	list [--status S]          the namespace's records in one state (parallel scan)
//	resolve KEY --done|--not-done   write the receipt, or release the record, after checking downstream
//	redrive [--dry-run]        sort the DLQ: delete what is done, send back what is not, leave the rest
//	stats                      records by state, queue depths, the age of the oldest messages
//
// Keys are hashed as the consumer's Guard hashes them (Guard.StorageKey);
// with --storage-key, inspect and resolve take the storage key itself, as
// list prints it and the consumer logs it (record_key). States: completed,
// in-progress (lease live), unconfirmed (in progress, lease ended: the
// effect may have run and nobody confirmed it), failed, expired (past
// retention: counts as absent), absent.
//
// resolve reads the record, shows it, asks (on a terminal, unless --yes)
// and writes on the condition that the record is still what it read:
// same lease token, status, attempts and update time. It refuses a live
// lease, an expired or absent record, and releasing a receipt.
//
// redrive reads the DLQ, hiding each message for --hold while it decides,
// and sorts each by its key's record: done (a receipt with the same
// payload fingerprint, idem.Fingerprint of the body) is deleted; not done
// (no record, a FAILED one with fewer attempts than --max-attempts,
// default the queue's maxReceiveCount, or an expired FAILED one) is sent
// back to the queue with its body and attributes, then deleted from the
// DLQ; malformed (no key), poison (failed every time it ran, or a receipt
// with another payload), unconfirmed, in-progress, a second copy of a key
// already going back in this run, and a message without a record but
// older than --retention (its receipt may have expired) are left, with
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
// document per run, whose fields are only ever added to:
//
//	inspect  {table, namespace, now, dlq: {url, checked, complete, messagesRead, note}, keys: [record]}
//	list     {table, namespace, now, status, olderThanSeconds, matched, records: [record]}
//	resolve  {table, namespace, now, decision, written, note, before: record, after: record}
//	redrive  {table, namespace, queue, dlq, now, dryRun, maxAttempts, complete,
//	          messages: [{messageId, storageKey, class, action, done, reason, error, body}], counts: {...}}
//	stats    {table, namespace, now, records: {completed, in-progress, unconfirmed, failed, expired, total},
//	          queue|dlq: {url, visible, inFlight, delayed, oldestAgeSeconds, oldestSource, oldestNote}}
//
//	record   {key, storageKey, state, meaning, status, attempts, leaseUntil, leaseLeftSeconds,
//	          lastError, resultBytes, resultOmitted, expiresAt, retentionLeftSeconds, updatedAt,
//	          dlqMessages: [{messageId, sentAt, receives, body}]}
//
// Times are RFC 3339 in UTC; a field without a value is left out. key
// appears only when typed, body only with --show-bodies. redrive's counts
// are by class (done, not-done, malformed, poison, unconfirmed,
// in-progress, copy, too-old), by planned action (move, delete, leave) and by what
// was done (moved, deleted, failed). stats' oldestSource is "cloudwatch"
// (ApproximateAgeOfOldestMessage), "peek" (the oldest SentTimestamp read
// from the DLQ) or "none"; the source queue is never received from.
//
// # Exit codes
//
// 0 done; 1 an error at run time — an unknown stack, table, queue or key,
// a table that is not a receipt table, no credentials, a write refused or
// a record that changed — with nothing written; 2 a wrong command line.
// Every error is one line on stderr.
package main
