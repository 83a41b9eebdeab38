package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// The DLQ side of inspect: which of the keys' messages are dead-lettered,
// how often the consumer can have received them, and what `idemctl
// redrive` does with each — a message in the DLQ is not delivered again
// by itself.

// dlqByKey reads the DLQ and groups its messages by storage key, when it
// can: it needs the DLQ and the key field.
func (a *app) dlqByKey(ctx context.Context, rc *receipts, r resources, f inspectFlags) (map[string][]message, dlqCheck, error) {
	check := dlqCheck{URL: r.dlqURL}
	switch {
	case f.noDLQ:
		check.Note = "not checked (--no-dlq)"
		return nil, check, nil
	case r.dlqURL == "":
		check.Note = "not checked: no dead-letter queue (--stack or --dlq-url)"
		return nil, check, nil
	case r.keyField == "":
		check.Note = fmt.Sprintf("not checked: no key field (the stack's %s output, or --key-field)", consumer.OutputKey)
		return nil, check, nil
	}
	dlq, err := a.openQueue(ctx, r.dlqURL, "--dlq-url")
	if err != nil {
		return nil, check, err
	}
	msgs, complete, err := a.peek(ctx, dlq, f.maxPeek)
	if err != nil {
		return nil, check, err
	}
	check.Checked, check.Complete, check.Read = true, complete, len(msgs)
	keyOf := consumer.KeyField(r.keyField)
	byKey := map[string][]message{}
	for _, m := range msgs {
		if key, err := keyOf(m.event()); err == nil {
			skey := rc.guard.StorageKey(key)
			byKey[skey] = append(byKey[skey], m)
		}
	}
	return byKey, check, nil
}

// redriveVerdict is what `idemctl redrive` does with a message, and why
// (inspect's JSON).
type redriveVerdict struct {
	Class  class  `json:"class"`
	Action action `json:"action"`
	Reason string `json:"reason"`
}

// attachDLQ gives each key its dead-lettered messages, sorted as
// `idemctl redrive` with its defaults sorts them — the same sorter, over
// the record inspect read — and says so in the key's meaning. Redrive's
// poison threshold is the queue's maxReceiveCount, read when some key has
// a message and the queue is known. A key without a message in a DLQ
// read whole is said to be delivered as usual.
func (a *app) attachDLQ(ctx context.Context, r resources, rc *receipts, keys []recordView, skeys []string, byKey map[string][]message, check dlqCheck) error {
	maxReceiveCount, opened := 0, false
	for i := range keys {
		v, msgs := &keys[i], byKey[skeys[i]]
		if len(msgs) == 0 {
			if check.Complete {
				v.Meaning = meaning(v.rec, v.State, v.now, v.resolve, dlqNews{checked: true})
			}
			continue
		}
		if !opened && r.queueURL != "" {
			source, err := a.openQueue(ctx, r.queueURL, "--queue-url")
			if err != nil {
				return err
			}
			maxReceiveCount, opened = source.maxReceiveCount(), true
		}
		found := v.State != stateAbsent
		s := &sorter{
			keyOf:       consumer.KeyField(r.keyField),
			storageKey:  func(key string) (string, error) { return rc.storageKey(key, false) },
			get:         func(context.Context, string) (idem.Record, bool, error) { return v.rec, found, nil },
			maxAttempts: maxReceiveCount,
			retention:   consumer.DefaultRetention,
			moving:      map[string]string{},
		}
		var verdicts []verdict
		for _, m := range msgs {
			verdict, err := s.sort(ctx, m, v.now)
			if err != nil {
				return err
			}
			mv := a.messageView(m)
			mv.deadLetterAfter = maxReceiveCount
			if maxReceiveCount > 0 || !releasedState(v.State) {
				mv.Redrive = &redriveVerdict{Class: verdict.class, Action: verdict.action(), Reason: verdict.reason}
			}
			v.DLQ = append(v.DLQ, mv)
			verdicts = append(verdicts, verdict)
		}
		says := redriveSays(msgs, verdicts, nextRun(v.rec, found))
		if maxReceiveCount == 0 && releasedState(v.State) {
			says = "`idemctl redrive` sends it back if it failed fewer times than the queue's maxReceiveCount, else leaves it as poison (maxReceiveCount unknown here: --stack or --queue-url)"
		}
		v.Meaning = meaning(v.rec, v.State, v.now, v.resolve, dlqNews{checked: true, redrive: says})
	}
	return nil
}

// releasedState reports the states redrive sends back below its poison
// threshold, the queue's maxReceiveCount by default.
func releasedState(st state) bool { return st == stateFailed || st == stateUnknown }

// nextRun is what the delivery of a message sent back does with the key
// of rec (found: it has a record).
func nextRun(rec idem.Record, found bool) string {
	switch {
	case !found:
		return "runs the effect"
	case rec.Status == idem.StatusUnknown:
		return "asks the partner (reconcile) or follows the consumer's policy"
	}
	return "runs it again"
}

// redriveSays is what `idemctl redrive` does with msgs, given their
// verdicts; runs is what the next delivery does with one sent back.
func redriveSays(msgs []message, verdicts []verdict, runs string) string {
	const listed = 3
	var says []string
	for i, v := range verdicts[:min(listed, len(verdicts))] {
		it := "it"
		if len(verdicts) > 1 {
			it = msgs[i].id
		}
		switch v.action() {
		case actMove:
			says = append(says, fmt.Sprintf("sends %s back, and the next delivery %s", it, runs))
		case actDelete:
			says = append(says, fmt.Sprintf("deletes %s as done", it))
		default:
			reason := v.reason
			if !strings.HasPrefix(reason, string(v.class)+":") {
				reason = fmt.Sprintf("%s: %s", v.class, reason)
			}
			says = append(says, fmt.Sprintf("leaves %s (%s)", it, reason))
		}
	}
	s := "`idemctl redrive` " + strings.Join(says, "; ")
	if len(verdicts) > listed {
		s += fmt.Sprintf("; and %d more (--output json has each)", len(verdicts)-listed)
	}
	return s
}

// inDLQ says whether a key's message is in the DLQ, and how sure that is.
func inDLQ(found []messageView, check dlqCheck, now time.Time) string {
	if !check.Checked {
		return check.Note
	}
	if len(found) == 0 {
		if check.Complete {
			return fmt.Sprintf("no (read all %d messages)", check.Read)
		}
		return fmt.Sprintf("not among the first %d messages read (--max-peek)", check.Read)
	}
	const listed = 3
	s := fmt.Sprintf("yes, %d message(s):", len(found))
	for i, m := range found[:min(listed, len(found))] {
		sent := "-"
		if m.SentAt != nil {
			sent = relative(now, *m.SentAt)
		}
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf(" %s (sent %s, %s)", m.MessageID, sent, receiveCount(m))
		if m.Body != nil {
			s += fmt.Sprintf(" body %q", *m.Body)
		}
	}
	if len(found) > listed {
		s += fmt.Sprintf(" and %d more (--output json lists them)", len(found)-listed)
	}
	return s
}

// receiveCount is what a message's receive count says of the consumer's
// receives: every read of the DLQ is counted with them, this run's too.
func receiveCount(m messageView) string {
	if m.ConsumerReceivesAtMost == nil {
		return "receive count unknown"
	}
	with := "with this read"
	if m.IdemctlReceives != 1 {
		with = fmt.Sprintf("with this run's %d reads", m.IdemctlReceives)
	}
	atMost := *m.ConsumerReceivesAtMost
	if atMost == 0 {
		return fmt.Sprintf("receive count %d %s: none by the consumer", m.Receives, with)
	}
	s := fmt.Sprintf("receive count %d %s: at most %d by the consumer, fewer if the DLQ was read before", m.Receives, with, atMost)
	if m.deadLetterAfter > 0 && atMost > m.deadLetterAfter {
		s += fmt.Sprintf(" (the queue dead-letters a message after %d)", m.deadLetterAfter)
	}
	return s
}
