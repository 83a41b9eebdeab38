// Package sqsbatch runs the records of an SQS event through an idem.Guard and
// reports partial batch failures, so a Lambda function with an SQS event
// source gets exactly-once effects per idempotency key:
//
//	h, err := sqsbatch.New(guard, sqsbatch.MessageID, issueGiftCard)
//	...
//	lambda.Start(h.Handle)
//
// The event source mapping must have ReportBatchItemFailures enabled
// (FunctionResponseTypes), or Lambda ignores the response and deletes or
// retries the whole batch.
//
// # Guarantees
//
//   - Every record goes through the Guard under its own key. Executed,
//     Duplicate and Reconciled records succeed; every other outcome
//     (InProgress, Failed, StoreError, Mismatch, LeaseLost, Rejected, Held)
//     makes the record a batch item failure, so SQS delivers it again after the visibility timeout
//     and, after the queue's maxReceiveCount, moves it to the dead-letter
//     queue. No record is ever dropped silently.
//   - Unconfirmed (the effect ran, its receipt could not be written before
//     the deadline) succeeds too, logged at ERROR as "record done without
//     receipt": the effect is done, and delivering the message again could
//     only run it a second time. A copy of the same key later in the batch
//     (or in a later batch of the same process) does not run it again: the
//     Guard owes the receipt and writes it instead.
//   - Records run concurrently, at most WithConcurrency at a time, except
//     that records with the same key run one after the other, on a FIFO
//     queue too when they are in different message groups (record.go): a
//     copy in the same batch is then a Duplicate at once, not an InProgress
//     that comes back after the visibility timeout. An error or a panic in
//     one record fails that record only, and on a standard queue the later
//     records of its key unrun (ErrGroupFailed), except one on its last
//     receive (WithMaxReceiveCount): it runs, rather than go to the
//     dead-letter queue unrun. A panic in the record hook or in the Tracer
//     is logged at ERROR and fails no record.
//   - FIFO queues (an event source ARN ending in ".fifo"): the records of one
//     message group run in order, one at a time; after a failure the rest of
//     the group is failed without running (ErrGroupFailed), so a later
//     message never overtakes an earlier one. That includes a record on its
//     last receive: it goes to the dead-letter queue unrun, order before
//     everything. Other groups go on.
//   - Handle keeps a little of the invocation for itself (a tenth of the
//     time left, at most 250 ms): every record's work, a receipt retried
//     until the deadline included, ends before it, so that the batch
//     response reaches Lambda. A response lost to a timeout would bring back
//     every record of the batch, the done ones with the rest.
//   - A record that meets InProgress comes back when the holder's lease
//     ends, not after the queue's visibility timeout, with WithVisibility;
//     on its last receive (WithMaxReceiveCount) it waits for the holder
//     within the invocation instead of failing into the dead-letter queue,
//     and when the holder's lease ends too late for that, WithRequeue sends
//     it to its queue again as a new message delayed until then, and the
//     record is done (RecordResult.Requeued; standard queues only). The
//     copy carries the id of the message it copies (MessageIDAttribute),
//     which MessageID keys it by (OriginalMessageID): a new message id is
//     not a new key. A message is requeued at most MaxRequeues times
//     (RequeuesAttribute); a count it carries that is not a Number from 0
//     to MaxRequeues counts as the bound reached, and a message without
//     room for the two attributes (SQS allows 10) is not requeued
//     (requeue.go). So the dead-letter queue holds poison, malformed and
//     truly failing messages, not copies of an effect that happened. A
//     requeue that fails or is refused leaves the record failed, as
//     without it, the reason logged: a message is never dropped. And
//     with WithDelete a record done on its last receive has its message
//     deleted at once, so that an invocation that dies afterwards (another
//     record of the batch crashing it) does not send it to the DLQ.
//   - A store that fails or is too slow for a while delays messages, it
//     does not dead-letter them, with WithStoreBackoff and WithVisibility:
//     a record that failed on the store (idem.StoreError, a transactional
//     commit that timed out included), or was not run after such a failure
//     of its key or group (ErrGroupFailed), stays hidden for
//     StoreBackoff(the queue's visibility timeout, its receive count), 2^n
//     visibility timeouts after its n-th receive, at most MaxStoreBackoff
//     (11 h 40 min, within SQS's 12 hours), less up to a quarter at random
//     so that records that failed together do not all come back together.
//     With a 3-minute visibility timeout and maxReceiveCount 5 that is 6,
//     12, 24 and 48 minutes (from 4.5, 9, 18 and 36): its five receives
//     span more than an hour, not 15 minutes. The same holds for every
//     record of a batch that failed with
//     ErrStoreDown. A record never comes back sooner than the queue would
//     bring it, nor while its invocation runs, and its last receive is not
//     delayed (the DLQ would only get it later). The change is asked as
//     soon as the record has failed, with time of its own when the store
//     used up the record's (half of the time kept for the response), so
//     that a batch-mate crashing the invocation later does not lose it; a
//     change that fails is logged and the record comes back after the
//     queue's visibility timeout. Keep the queue's retention period longer
//     than the sum of the backoffs before the last receive: a message
//     still hidden when it expires is neither run nor dead-lettered.
//   - Handle returns exactly the failed records' message ids and a nil
//     error: a non-nil error would make Lambda retry the whole batch,
//     successes included. One exception: when every record failed because
//     the store failed (idem.StoreError), Handle returns an error wrapping
//     ErrStoreDown and idem.ErrStore, so that Lambda counts a function error
//     and the event source mapping backs off instead of polling on at full
//     speed against a store that is down (Powertools' BatchProcessor does
//     the same with raise_on_entire_batch_failure). Partial failures stay
//     partial.
//
// # Tracing
//
// WithTracer follows each batch and record, e.g. as OpenTelemetry spans
// (the module pkg/idem/otelidem): the effect runs under the record's
// context, so its own calls are children of the record's span. A Tracer
// that panics is logged at ERROR ("tracer panicked") and the batch or record
// goes on untraced (tracer.go).
//
// # Why a payload mismatch fails the record
//
// A key reused with a different payload is permanent: retrying cannot fix
// it. Failing it anyway sends it to the dead-letter queue after
// maxReceiveCount, where an operator sees it with the reason logged here.
// Reporting it as a success would delete a message whose effect never ran.
//
// # Logs
//
// One line per failed record (WARN for in-progress and skipped records,
// ERROR otherwise) and one INFO line per successful or requeued record, with the
// Lambda request id, the message id, the storage key (namespace#sha256 of
// the key unless the Guard uses plain keys), the outcome, the attempts and
// the error. Message bodies and keys are never logged; the errors the Guard
// makes name storage keys only, and the effect's own errors are logged as
// they are, so keep business identifiers out of them.
package sqsbatch
