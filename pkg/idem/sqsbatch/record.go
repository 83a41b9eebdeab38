package sqsbatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// How one batch's records run: grouped into units, each unit in order on
// one worker, each record through the Guard, then logged and passed to the
// hook.

// keyed is a record's key, or why it has none.
type keyed struct {
	key string
	err error
	// lock is shared by the records of the batch with this key, so that
	// they run one after the other whatever their unit (runRecord).
	lock chan struct{}
}

// keyOf runs the key function; a panic in it fails that record only.
func (h *Handler) keyOf(msg events.SQSMessage) (key string, err error) {
	defer func() {
		if p := recover(); p != nil {
			key, err = "", fmt.Errorf("%w in the key function: %v", ErrPanic, p)
		}
	}()
	key, err = h.key(msg)
	if err == nil && key == "" {
		err = fmt.Errorf("%w: empty key", ErrNoKey)
	}
	return key, err
}

// keysOf runs the key function on every record, and gives the records of
// one key one lock.
func (h *Handler) keysOf(records []events.SQSMessage) []keyed {
	keys := make([]keyed, len(records))
	locks := make(map[string]chan struct{})
	for i, msg := range records {
		keys[i].key, keys[i].err = h.keyOf(msg)
		if keys[i].err != nil {
			continue
		}
		if locks[keys[i].key] == nil {
			locks[keys[i].key] = make(chan struct{}, 1)
		}
		keys[i].lock = locks[keys[i].key]
	}
	return keys
}

// isFIFO reports whether msg comes from a FIFO queue (its ARN ends in ".fifo").
func isFIFO(msg events.SQSMessage) bool { return strings.HasSuffix(msg.EventSourceARN, ".fifo") }

// split groups the indexes of records into units of work: by message group
// on a FIFO queue, by key on a standard queue (a record without a key is a
// unit of its own). The queue type is taken from the first record: a batch
// comes from one event source.
func split(records []events.SQSMessage, keys []keyed) [][]int {
	fifo := isFIFO(records[0])
	var units [][]int
	unitOf := make(map[string]int)
	for i, r := range records {
		id := keys[i].key
		switch {
		case fifo:
			id = r.Attributes["MessageGroupId"]
		case keys[i].err != nil:
			units = append(units, []int{i})
			continue
		}
		u, ok := unitOf[id]
		if !ok {
			u = len(units)
			unitOf[id] = u
			units = append(units, nil)
		}
		units[u] = append(units[u], i)
	}
	return units
}

// late is the context of the store backoff's visibility changes
// (afterRecords).
func (h *Handler) runUnit(ctx, late context.Context, log *slog.Logger, records []events.SQSMessage, keys []keyed, unit []int, results []RecordResult) {
	groupFailed := false
	storeFailed := false   // the unit's last failure was the store's
	var held *RecordResult // the unit's record whose key was held
	for _, i := range unit {
		// After a failure, the rest of a FIFO group is skipped: it would
		// overtake the failed record. On a standard queue the rest of the
		// unit are copies of the failed record's key, skipped but for one
		// on its last receive: skipped, it would go to the dead-letter queue
		// unrun; run, it takes the failed record over, or meets its holder
		// and waits or is requeued (inProgress).
		if groupFailed && (isFIFO(records[i]) || !h.lastReceive(records[i])) {
			r := RecordResult{MessageID: records[i].MessageId, Err: ErrGroupFailed, Failed: true}
			if held != nil && keys[i].err == nil && keys[i].key == held.Key {
				// A copy of a held key is held as well, not skipped: it
				// reaches the dead-letter queue with the same reason.
				r.Key, r.Outcome, r.Attempts, r.Err = held.Key, idem.Held, held.Attempts, held.Err
			}
			results[i] = r
			h.done(ctx, log, r)
			if storeFailed {
				h.backOff(ctx, late, log, records[i])
			}
			continue
		}
		r := h.runRecord(ctx, log, records[i], keys[i])
		results[i] = r
		if r.Outcome == idem.Held {
			held = &r
		}
		if r.Failed {
			groupFailed, storeFailed = true, r.Outcome == idem.StoreError
			if storeFailed {
				h.backOff(ctx, late, log, records[i])
			}
		}
	}
}

// LogRerun is the message of the WARN line a record with outcome
// idem.Rerun is logged with (attributes message_id, outcome "rerun",
// attempts, storage_key): what an operator, or a proof, looks for to
// find the keys whose effect may have run twice.
const LogRerun = "record done: the effect ran again after an unknown outcome"

// done logs a record's result and passes it to the hook.
func (h *Handler) done(ctx context.Context, log *slog.Logger, r RecordResult) {
	h.logRecord(ctx, log, r)
	h.callHook(ctx, log, r)
}

// callHook runs the record hook; a panic in it is logged, not allowed to
// take the other records of the batch down with it.
func (h *Handler) callHook(ctx context.Context, log *slog.Logger, r RecordResult) {
	if h.opts.hook == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			log.ErrorContext(ctx, "record hook panicked", slog.String("message_id", r.MessageID), slog.Any("panic", p))
		}
	}()
	h.opts.hook(ctx, r)
}

func (h *Handler) runRecord(ctx context.Context, log *slog.Logger, msg events.SQSMessage, k keyed) (r RecordResult) {
	ctx, end := h.traceRecord(ctx, log, msg)
	defer func() { end(r) }() // last: after the log line and the hook
	// Logged and passed to the hook under the record's context (its span),
	// after the recover below has set r.
	defer func() { h.done(ctx, log, r) }()
	r.MessageID = msg.MessageId
	if k.err != nil {
		r.Outcome, r.Err, r.Failed = idem.Rejected, fmt.Errorf("sqsbatch: key: %w", k.err), true
		return r
	}
	key := k.key
	r.Key = key

	// Copies of one key in two units (FIFO message groups) would otherwise
	// run at once: the second would meet the first's lease, InProgress, and
	// fail, into the dead-letter queue on its last receive, although the
	// effect happened. After the first, it is a Duplicate. A worker holds
	// one key at a time, so the waits cannot deadlock.
	k.lock <- struct{}{}
	defer func() { <-k.lock }()

	// A panic in the effect (the Guard releases the record and re-raises
	// it) stops here, so it fails this record only.
	defer func() {
		if p := recover(); p != nil {
			log.ErrorContext(ctx, "effect panicked",
				slog.String("message_id", msg.MessageId),
				slog.Any("panic", p),
				slog.String("stack", string(debug.Stack())))
			r.Outcome, r.Err, r.Failed = idem.Failed, fmt.Errorf("%w: %v", ErrPanic, p), true
		}
	}()

	payload := h.opts.payload(msg)
	run := func() (idem.Result, error) {
		if h.txfn != nil {
			return h.guard.DoTx(ctx, key, payload, func(ctx context.Context) (idem.TxEffect, error) {
				return h.txfn(ctx, key, msg)
			})
		}
		return h.guard.Do(ctx, key, payload, func(ctx context.Context) ([]byte, error) {
			return h.fn(ctx, key, msg)
		}, h.reconcileFor(key, msg)...)
	}
	res, err := run()
	if res.Outcome == idem.InProgress {
		res, r.Requeued, err = h.inProgress(ctx, log, msg, res, err, run)
	}
	r.Outcome, r.Attempts, r.Value, r.Resolved, r.Rerun, r.Err = res.Outcome, res.Attempts, res.Value, res.Resolved, res.Rerun, err
	r.Failed = !succeeded(res.Outcome) && !r.Requeued
	h.deleteIfLast(ctx, log, msg, r)
	return r
}

// succeeded reports whether a record with outcome o is done, so its message
// can be deleted. Unconfirmed is done: the effect ran, and delivering the
// message again could only run it a second time once the lease ends.
// Reconciled is done: the effect had taken place, and its receipt is
// written. Rerun is done: the effect ran again, receipt written. Held is
// not: its message fails until it reaches the dead-letter queue with the
// reason, as an operator settles the key.
func succeeded(o idem.Outcome) bool {
	return o == idem.Executed || o == idem.Rerun || o == idem.Duplicate || o == idem.Unconfirmed || o == idem.Reconciled
}

func (h *Handler) logRecord(ctx context.Context, log *slog.Logger, r RecordResult) {
	attrs := []slog.Attr{
		slog.String("message_id", r.MessageID),
		slog.String("outcome", outcomeName(r)),
		slog.Int("attempts", r.Attempts),
	}
	if r.Key != "" {
		// The storage key: hashed unless the Guard uses plain keys, and what
		// an operator looks up in the table.
		attrs = append(attrs, slog.String("storage_key", h.guard.StorageKey(r.Key)))
	}
	if r.Resolved {
		// Skipped on a receipt an operator wrote, not the effect.
		attrs = append(attrs, slog.Bool("resolved", true))
	}
	if r.Rerun && r.Outcome != idem.Rerun {
		// A re-run whose receipt then failed: counted as a re-run too.
		attrs = append(attrs, slog.Bool("rerun", true))
	}
	if r.Outcome == idem.Unconfirmed {
		// Done, but its receipt is missing: a later copy of the message
		// may run the effect again. Operators alarm on it.
		attrs = append(attrs, slog.String("error", r.Err.Error()))
		log.LogAttrs(ctx, slog.LevelError, "record done without receipt", attrs...)
		return
	}
	if r.Outcome == idem.Rerun {
		// The window of retry, entered: the effect may now have taken
		// place twice. Operators count it (metric Rerun) and look here.
		log.LogAttrs(ctx, slog.LevelWarn, LogRerun, attrs...)
		return
	}
	if r.Requeued {
		log.LogAttrs(ctx, slog.LevelInfo, "record requeued", attrs...)
		return
	}
	if !r.Failed {
		log.LogAttrs(ctx, slog.LevelInfo, "record done", attrs...)
		return
	}
	if r.Err != nil {
		attrs = append(attrs, slog.String("error", r.Err.Error()))
	}
	level := slog.LevelError
	if r.Outcome == idem.InProgress || errors.Is(r.Err, ErrGroupFailed) {
		level = slog.LevelWarn // routine: the record comes back later
	}
	log.LogAttrs(ctx, level, "record failed", attrs...)
}

func outcomeName(r RecordResult) string {
	if r.Outcome == 0 {
		return "skipped"
	}
	if r.Requeued {
		return "requeued"
	}
	return r.Outcome.String()
}
