package main

import (
	"fmt"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// state is what a record means to an operator: its status read with the
// clock, as the Guard's takeable condition reads it.
type state string

const (
	stateAbsent      state = "absent"
	stateCompleted   state = "completed"
	stateInProgress  state = "in-progress" // IN_PROGRESS, lease live
	stateUnconfirmed state = "unconfirmed" // IN_PROGRESS, lease ended: nobody confirmed the effect
	stateFailed      state = "failed"      // FAILED: a definite failure, the effect did not take place
	stateUnknown     state = "unknown"     // UNKNOWN: released after an error that does not say whether the effect took place
	stateHeld        state = "held"        // HELD: an unknown outcome parked until an operator settles it
	stateExpired     state = "expired"     // past expiresAt: counts as absent until TTL deletes it
	// stateUnrecognized is a status the idem library never writes.
	stateUnrecognized state = "unrecognized"
)

// states lists what `list --status` takes, in the order stats prints.
var states = []state{stateCompleted, stateInProgress, stateUnconfirmed, stateFailed, stateUnknown, stateHeld, stateExpired}

// stateOf reads rec at now with the units of dynamostore's condition:
// expiresAt in seconds, leaseUntil in milliseconds.
func stateOf(rec idem.Record, found bool, now time.Time) state {
	switch {
	case !found:
		return stateAbsent
	case !rec.ExpiresAt.IsZero() && rec.ExpiresAt.Unix() < now.Unix():
		return stateExpired
	case rec.Status == idem.StatusCompleted:
		return stateCompleted
	case rec.Status == idem.StatusFailed:
		return stateFailed
	case rec.Status == idem.StatusUnknown:
		return stateUnknown
	case rec.Status == idem.StatusHeld:
		return stateHeld
	case rec.Status == idem.StatusInProgress && !rec.LeaseUntil.IsZero() && rec.LeaseUntil.UnixMilli() < now.UnixMilli():
		return stateUnconfirmed
	case rec.Status == idem.StatusInProgress:
		return stateInProgress
	}
	return stateUnrecognized
}

// dlqNews is what inspect found of a key's messages in the DLQ, which
// are not delivered again by themselves: nothing (the zero value: list,
// resolve, inspect without a whole read of the DLQ), that none is there,
// or what `idemctl redrive` does with them (redriveSays).
type dlqNews struct {
	checked bool
	redrive string
}

// meaning says in words what st means for the key and what to do next;
// resolve is how the operator would name the key to `idemctl resolve`.
func meaning(rec idem.Record, st state, now time.Time, resolve string, dlq dlqNews) string {
	switch st {
	case stateAbsent:
		return withDLQ("absent: no record — the effect never started here, or its receipt expired and was deleted; a copy runs the effect", dlq)
	case stateExpired:
		return withDLQ(fmt.Sprintf("expired %s ago (a %s record that TTL has not deleted yet): counts as absent; a copy runs the effect again", since(now, rec.ExpiresAt), rec.Status), dlq)
	case stateCompleted:
		if rec.Resolved {
			return withDLQ("completed: an operator found the effect happened and wrote the receipt (idemctl resolve --done); a copy is skipped", dlq)
		}
		return withDLQ("completed: the effect happened; a copy is skipped", dlq)
	case stateInProgress:
		return withDLQ(fmt.Sprintf("in progress, lease live until %s (%s left): an attempt is running the effect; a copy waits for it", stamp(rec.LeaseUntil), until(now, rec.LeaseUntil)), dlq)
	case stateUnconfirmed:
		return withDLQ(fmt.Sprintf("unconfirmed: the effect may have run, its receipt was not written (lease ended %s ago); the next copy runs it again — check downstream, then `idemctl resolve %s --done` or `--not-done`", since(now, rec.LeaseUntil), resolve), dlq)
	case stateFailed:
		return released(fmt.Sprintf("failed %s (last: %s)", times(rec.Attempts), orDefault(rec.LastError, "no error recorded")),
			"the next delivery runs it again", dlq)
	case stateUnknown:
		return released(fmt.Sprintf("unknown: the last attempt's effect failed without saying whether it took place (%s, last: %s)", attemptCount(rec.Attempts), orDefault(rec.LastError, "no error recorded")),
			reconciles, dlq)
	case stateHeld:
		return withDLQ(fmt.Sprintf("held: the outcome of the last attempt's effect is unknown and could not be reconciled (last: %s); the consumer's policy parked the key: no delivery runs it (every copy fails with ErrHeld and ends in the DLQ) and it never expires — it is never run again until you settle it: look it up at the remote system by its key, then `idemctl resolve %s --done` or `--not-done`", orDefault(rec.LastError, "no error recorded"), resolve), dlq)
	}
	return withDLQ(fmt.Sprintf("unrecognized status %q: not written by the idem library", rec.Status), dlq)
}

// released is the meaning of a record an attempt gave up (FAILED,
// UNKNOWN): what it is, then what comes of it — next, unless its message
// is in the DLQ, which only `idemctl redrive` sends back.
func released(m, next string, dlq dlqNews) string {
	switch {
	case dlq.redrive != "":
		return m + "; in the DLQ, so not delivered again: " + dlq.redrive
	case dlq.checked:
		return m + ": " + next
	}
	return m + ": " + next + " — if its message is in the DLQ, only once `idemctl redrive` sends it back"
}

// withDLQ is m, then what redrive does with the key's dead-lettered
// messages, if any.
func withDLQ(m string, dlq dlqNews) string {
	if dlq.redrive == "" {
		return m
	}
	return m + "; in the DLQ: " + dlq.redrive
}

// attemptCount is n attempts in words.
func attemptCount(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}
