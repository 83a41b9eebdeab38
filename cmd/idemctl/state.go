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
	stateFailed      state = "failed"
	stateExpired     state = "expired" // past expiresAt: counts as absent until TTL deletes it
	stateUnknown     state = "unknown" // a status dynamostore never writes
)

// states lists what `list --status` takes, in the order stats prints.
var states = []state{stateCompleted, stateInProgress, stateUnconfirmed, stateFailed, stateExpired}

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
	case rec.Status == idem.StatusInProgress && !rec.LeaseUntil.IsZero() && rec.LeaseUntil.UnixMilli() < now.UnixMilli():
		return stateUnconfirmed
	case rec.Status == idem.StatusInProgress:
		return stateInProgress
	}
	return stateUnknown
}

// meaning says in words what st means for the key and what to do next;
// resolve is how the operator would name the key to `idemctl resolve`.
func meaning(rec idem.Record, st state, now time.Time, resolve string) string {
	switch st {
	case stateAbsent:
		return "absent: no record — the effect never started here, or its receipt expired and was deleted; a copy runs the effect"
	case stateExpired:
		return fmt.Sprintf("expired %s ago (a %s record that TTL has not deleted yet): counts as absent; a copy runs the effect again", since(now, rec.ExpiresAt), rec.Status)
	case stateCompleted:
		return "completed: the effect happened; a copy is skipped"
	case stateInProgress:
		return fmt.Sprintf("in progress, lease live until %s (%s left): an attempt is running the effect; a copy waits for it", stamp(rec.LeaseUntil), until(now, rec.LeaseUntil))
	case stateUnconfirmed:
		return fmt.Sprintf("unconfirmed: the effect may have run, its receipt was not written (lease ended %s ago); the next copy runs it again — check downstream, then `idemctl resolve %s --done` or `--not-done`", since(now, rec.LeaseUntil), resolve)
	case stateFailed:
		last := rec.LastError
		if last == "" {
			last = "no error recorded"
		}
		return fmt.Sprintf("failed %s (last: %s): the next delivery runs it again", times(rec.Attempts), last)
	}
	return fmt.Sprintf("unknown status %q: not written by the idem library", rec.Status)
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}
