package main

import (
	"fmt"
	"io"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// recordView is a record as inspect, list and resolve print it, and its
// JSON (documented in doc.go).
type recordView struct {
	// Key is the business key, only when the operator typed it.
	Key        string `json:"key,omitempty"`
	StorageKey string `json:"storageKey"`
	State      state  `json:"state"`
	Meaning    string `json:"meaning"`
	Status     string `json:"status,omitempty"`
	// PrevStatus is the status of the record the last attempt took over
	// ("" for none): UNKNOWN or IN_PROGRESS, an unknown outcome it had to
	// reconcile first. LastError is then still that attempt's.
	PrevStatus string `json:"prevStatus,omitempty"`
	Attempts   int    `json:"attempts"`
	// LeaseUntil and LeaseLeftSeconds (negative once ended) are the lease
	// of the attempt that last took the record.
	LeaseUntil       *time.Time `json:"leaseUntil,omitempty"`
	LeaseLeftSeconds *int64     `json:"leaseLeftSeconds,omitempty"`
	// LastError is the error class of the last failed attempt, as stored;
	// LastErrorNote says what it is when it is a Go type, not a class.
	LastError     string `json:"lastError,omitempty"`
	LastErrorNote string `json:"lastErrorNote,omitempty"`
	ResultBytes   int    `json:"resultBytes"`
	ResultOmitted bool   `json:"resultOmitted,omitempty"`
	// Resolved: an operator wrote the receipt (resolve --done), not the
	// effect; it keeps no result.
	Resolved bool `json:"resolved,omitempty"`
	// ExpiresAt is the end of retention (TTL); RetentionLeftSeconds is
	// negative once expired.
	ExpiresAt            *time.Time `json:"expiresAt,omitempty"`
	RetentionLeftSeconds *int64     `json:"retentionLeftSeconds,omitempty"`
	UpdatedAt            *time.Time `json:"updatedAt,omitempty"`
	// DLQ: the dead-lettered messages of the key (inspect only).
	DLQ []messageView `json:"dlqMessages,omitempty"`

	rec idem.Record
	now time.Time
	// resolve is how the operator names the key to `idemctl resolve`.
	resolve string
}

// messageView is a dead-lettered message; Body only with --show-bodies.
type messageView struct {
	MessageID string     `json:"messageId"`
	SentAt    *time.Time `json:"sentAt,omitempty"`
	// Receives is SQS's ApproximateReceiveCount, read by receiving the
	// message: the consumer's receives, every earlier read of the DLQ
	// (idemctl's or anyone's) and IdemctlReceives, this run's. The
	// consumer's are at most ConsumerReceivesAtMost, absent when SQS gave
	// no count.
	Receives               int     `json:"receives"`
	IdemctlReceives        int     `json:"idemctlReceives"`
	ConsumerReceivesAtMost *int    `json:"consumerReceivesAtMost,omitempty"`
	Body                   *string `json:"body,omitempty"`
	// Redrive is what `idemctl redrive` does with the message (inspect).
	Redrive *redriveVerdict `json:"redrive,omitempty"`

	// deadLetterAfter is the queue's maxReceiveCount, 0 when unknown.
	deadLetterAfter int
}

// view interprets rec (found under skey) at now; typed is the key as the
// operator typed it, "" when they gave a storage key.
func (a *app) view(rec idem.Record, found bool, skey, typed string, now time.Time) recordView {
	st := stateOf(rec, found, now)
	shown, resolveArg := a.shownKey(skey), "--storage-key "+a.shownKey(skey)
	if typed != "" {
		// The operator typed the key: a plain storage key tells nothing new.
		shown, resolveArg = skey, typed
	}
	v := recordView{
		Key: typed, StorageKey: shown, State: st, Meaning: meaning(rec, st, now, resolveArg, dlqNews{}),
		Status: string(rec.Status), PrevStatus: string(rec.PrevStatus), Attempts: rec.Attempts, LastError: rec.LastError, LastErrorNote: lastErrorNote(rec.LastError),
		ResultBytes: len(rec.Result), ResultOmitted: rec.ResultOmitted, Resolved: rec.Resolved,
		LeaseUntil: stampPtr(rec.LeaseUntil), ExpiresAt: stampPtr(rec.ExpiresAt), UpdatedAt: stampPtr(rec.UpdatedAt),
		rec: rec, now: now, resolve: resolveArg,
	}
	if !rec.LeaseUntil.IsZero() {
		s := seconds(rec.LeaseUntil.Sub(now))
		v.LeaseLeftSeconds = &s
	}
	if !rec.ExpiresAt.IsZero() {
		s := seconds(rec.ExpiresAt.Sub(now))
		v.RetentionLeftSeconds = &s
	}
	return v
}

func (a *app) messageView(m message) messageView {
	v := messageView{MessageID: m.id, SentAt: stampPtr(m.sentAt), Receives: m.receives, IdemctlReceives: m.reads}
	if m.receives > 0 {
		n := max(0, m.receives-m.reads)
		v.ConsumerReceivesAtMost = &n
	}
	if a.showBodies {
		v.Body = &m.body
	}
	return v
}

// printRecord writes v as a block of name/value lines.
func (a *app) printRecord(w io.Writer, v recordView) {
	title := v.StorageKey
	if v.Key != "" {
		title = fmt.Sprintf("%s\t(%s)", v.Key, v.StorageKey)
	}
	fmt.Fprintln(w, title)
	fmt.Fprintf(w, "  state\t%s\n", v.Meaning)
	if v.State == stateAbsent {
		return
	}
	rec, now := v.rec, v.now
	fmt.Fprintf(w, "  status\t%s, %d attempt(s)\n", rec.Status, rec.Attempts)
	if rec.Status == idem.StatusInProgress {
		// Only a record in progress is held: a receipt or a release
		// ends the lease, whatever its end said.
		fmt.Fprintf(w, "  lease\tuntil %s\n", relative(now, rec.LeaseUntil))
		if rec.PrevStatus != "" {
			// The acquire kept the last error of the attempt it took over.
			fmt.Fprintf(w, "  took over\ta record left %s (the last error is that attempt's)\n", rec.PrevStatus)
		}
	}
	lastError := orDash(rec.LastError)
	if v.LastErrorNote != "" {
		lastError += " (" + v.LastErrorNote + ")"
	}
	fmt.Fprintf(w, "  last error\t%s\n", lastError)
	fmt.Fprintf(w, "  result\t%s\n", resultSize(rec))
	fmt.Fprintf(w, "  retention\t%s\n", retention(now, rec))
	fmt.Fprintf(w, "  updated\t%s\n", relative(now, rec.UpdatedAt))
}

// retention is when rec expires, in words: a held record never does.
func retention(now time.Time, rec idem.Record) string {
	if rec.ExpiresAt.IsZero() && rec.Status == idem.StatusHeld {
		return "none: a held record never expires, until it is settled"
	}
	return "until " + relative(now, rec.ExpiresAt)
}

// expiry is retention in a table cell.
func expiry(now time.Time, rec idem.Record) string {
	if rec.ExpiresAt.IsZero() && rec.Status == idem.StatusHeld {
		return "never (held)"
	}
	return relative(now, rec.ExpiresAt)
}
