package main

import (
	"context"
	"fmt"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// How redrive sorts the DLQ. Only two things are ever done to a message:
// deleted, when a receipt proves its effect happened with this very
// payload; sent back to the queue, when nothing shows the effect
// happened. Everything else is left where it is with the reason. A
// message sent back goes through the consumer's Guard again, so even a
// wrong "not done" cannot run an effect whose receipt exists; the only
// records that could let it run twice — unconfirmed ones, in progress or
// expired — keep their message in the DLQ until a person has looked. An
// UNKNOWN record goes back like a FAILED one: the next delivery asks the
// partner first, or follows the policy the consumer chose for it. A HELD
// one stays: its copy would only fail again until an operator settles it.

// class is what a dead-lettered message is.
type class string

const (
	classDone        class = "done"        // a receipt with the same payload: the effect happened
	classNotDone     class = "not-done"    // nothing shows the effect happened
	classMalformed   class = "malformed"   // no valid key: the consumer rejects it every time
	classPoison      class = "poison"      // fails every time, or reuses a key with another payload
	classUnconfirmed class = "unconfirmed" // the effect may have run: a person checks first
	classInProgress  class = "in-progress" // an attempt holds the key right now
	classCopy        class = "copy"        // another copy of the key goes back in this run
	classTooOld      class = "too-old"     // no record, but older than the receipts are kept
	classHeld        class = "held"        // an unknown outcome parked until an operator settles it
)

// action is what redrive does with a message.
type action string

const (
	actDelete action = "delete"
	actMove   action = "move"
	actLeave  action = "leave"
)

var actionOf = map[class]action{
	classDone: actDelete, classNotDone: actMove, classMalformed: actLeave, classPoison: actLeave,
	classUnconfirmed: actLeave, classInProgress: actLeave, classCopy: actLeave, classTooOld: actLeave,
	classHeld: actLeave,
}

// verdict is a message's class and why.
type verdict struct {
	class  class
	reason string
	skey   string // "" when the message has no valid key
}

func (v verdict) action() action { return actionOf[v.class] }

// lookup reads the record under a storage key (receipts.get).
type lookup func(ctx context.Context, skey string) (idem.Record, bool, error)

// sorter sorts the messages of one run, in the order received.
type sorter struct {
	keyOf      sqsbatch.KeyFunc
	storageKey func(key string) (string, error)
	get        lookup
	// maxAttempts: a FAILED record with this many attempts failed every
	// time it ran (default: the queue's maxReceiveCount).
	maxAttempts int
	// retention is how long the consumer keeps receipts: a message sent
	// longer ago may have had one that TTL deleted since.
	retention time.Duration
	// moving are the keys sent back in this run, with their payload's
	// fingerprint: a second copy of a key waits for the first to be
	// processed instead of racing it.
	moving map[string]string
}

// sort returns m's verdict, reading its key's record at now.
func (s *sorter) sort(ctx context.Context, m message, now time.Time) (verdict, error) {
	key, err := s.keyOf(m.event())
	if err != nil {
		return verdict{class: classMalformed, reason: "no key: " + oneLine(err)}, nil
	}
	skey, err := s.storageKey(key)
	if err != nil {
		return verdict{class: classMalformed, reason: "an invalid key: " + oneLine(err)}, nil
	}
	fp := idem.Fingerprint([]byte(m.body))
	if prev, ok := s.moving[skey]; ok {
		if samePayload(prev, fp) {
			return verdict{classCopy, "another copy of this key goes back in this run: once it is processed, this one is already done (redrive again then)", skey}, nil
		}
		return verdict{classPoison, "another message of this key, with another payload, goes back in this run", skey}, nil
	}
	rec, found, err := s.get(ctx, skey)
	if err != nil {
		return verdict{}, err
	}
	v := s.judge(rec, found, fp, m.sentAt, now)
	v.skey = skey
	if v.class == classNotDone {
		s.moving[skey] = fp
	}
	return v, nil
}

// judge classes a message of payload fingerprint fp, sent at sentAt, by
// its key's record.
func (s *sorter) judge(rec idem.Record, found bool, fp string, sentAt, now time.Time) verdict {
	same := samePayload(rec.Fingerprint, fp)
	switch st := stateOf(rec, found, now); st {
	case stateAbsent:
		// A receipt outlives every delivery of its message by the
		// retention (it expires a retention after the attempt, which
		// follows the send), so no record means no effect only for a
		// message younger than that.
		if age := now.Sub(sentAt); s.retention > 0 && !sentAt.IsZero() && age > s.retention {
			return verdict{class: classTooOld, reason: fmt.Sprintf("no record, but sent %s ago, longer than receipts are kept (--retention %s): its receipt may have expired; check downstream, then delete it or send it back yourself", human(age), human(s.retention))}
		}
		return verdict{class: classNotDone, reason: "no record: the effect never ran"}
	case stateExpired:
		// Past retention the Guard reads the record as absent, so a copy
		// sent back would run the effect: a readable receipt still
		// proves the effect happened.
		switch {
		case rec.Status == idem.StatusCompleted && same:
			return verdict{class: classDone, reason: fmt.Sprintf("its receipt expired at %s but is still readable: the effect happened", stamp(rec.ExpiresAt))}
		case rec.Status == idem.StatusCompleted:
			return verdict{class: classPoison, reason: "an expired receipt for this key with another payload: the key was reused"}
		case rec.Status == idem.StatusInProgress:
			return verdict{class: classUnconfirmed, reason: "its record expired unconfirmed: the effect may have run; check downstream, then delete the message or send it back yourself"}
		case rec.Status == idem.StatusUnknown || rec.Status == idem.StatusHeld:
			// The acquire of an expired item still finds its status
			// and treats it as the unknown outcome it is.
			return verdict{class: classNotDone, reason: fmt.Sprintf("its %s record expired at %s: whether the effect took place is unknown; %s", rec.Status, stamp(rec.ExpiresAt), reconciles)}
		}
		return verdict{class: classNotDone, reason: fmt.Sprintf("its %s record expired at %s: the effect did not happen", rec.Status, stamp(rec.ExpiresAt))}
	case stateCompleted:
		if same {
			return verdict{class: classDone, reason: "a receipt with the same payload: the effect happened"}
		}
		return verdict{class: classPoison, reason: "a receipt for this key with another payload: the key was reused (payload mismatch)"}
	case stateInProgress:
		return verdict{class: classInProgress, reason: fmt.Sprintf("an attempt holds the key until %s: redrive again after that", stamp(rec.LeaseUntil))}
	case stateUnconfirmed:
		return verdict{class: classUnconfirmed, reason: fmt.Sprintf("unconfirmed since %s: the effect may have run; check downstream, `idemctl resolve`, then redrive again", stamp(rec.LeaseUntil))}
	case stateFailed, stateUnknown:
		if s.maxAttempts > 0 && rec.Attempts >= s.maxAttempts {
			return verdict{class: classPoison, reason: fmt.Sprintf("failed every time it ran, %d times (last: %s): fix the cause, then redrive with --max-attempts %d", rec.Attempts, lastErrorBrief(rec.LastError), rec.Attempts+1)}
		}
		if st == stateUnknown {
			last := ", the last"
			if rec.Attempts == 1 {
				last = ","
			}
			return verdict{class: classNotDone, reason: fmt.Sprintf("failed %s%s without saying whether the effect took place (last: %s), fewer than %d: %s", times(rec.Attempts), last, lastErrorBrief(rec.LastError), s.maxAttempts, reconciles)}
		}
		return verdict{class: classNotDone, reason: fmt.Sprintf("failed %s (last: %s), fewer than %d: the effect did not happen", times(rec.Attempts), lastErrorBrief(rec.LastError), s.maxAttempts)}
	case stateHeld:
		return verdict{class: classHeld, reason: "held: settle it first with idemctl resolve (--done or --not-done), then redrive again: sent back now, it would only fail again"}
	}
	return verdict{class: classPoison, reason: fmt.Sprintf("a record with status %q, which the idem library never writes", rec.Status)}
}

// reconciles is what the next delivery of a key with an unknown outcome
// does.
const reconciles = "the next delivery asks the partner (reconcile) or follows the consumer's policy"

// samePayload is the Guard's rule: an empty fingerprint matches any.
func samePayload(a, b string) bool { return a == "" || b == "" || a == b }
