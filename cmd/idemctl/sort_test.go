package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// TestJudge: each record a dead-lettered message's key can have, and what
// becomes of the message. Only a receipt with the same payload deletes it;
// only nothing-shows-it-happened sends it back.
func TestJudge(t *testing.T) {
	now := time.Date(2026, 11, 24, 2, 0, 0, 0, time.UTC)
	fp := idem.Fingerprint([]byte("payload"))
	other := idem.Fingerprint([]byte("another payload"))
	rec := func(s idem.Status, attempts int, fingerprint string, leaseLeft, retentionLeft time.Duration) idem.Record {
		return idem.Record{Status: s, Attempts: attempts, Fingerprint: fingerprint, LastError: "*net.OpError",
			LeaseUntil: now.Add(leaseLeft), ExpiresAt: now.Add(retentionLeft)}
	}
	const week = 7 * 24 * time.Hour
	s := &sorter{maxAttempts: 5, retention: week}
	for _, tc := range []struct {
		name   string
		rec    idem.Record
		found  bool
		sentAt time.Time
		class  class
		reason string
	}{
		{"no record", idem.Record{}, false, now.Add(-time.Hour), classNotDone, "no record"},
		{"no record, older than retention", idem.Record{}, false, now.Add(-8 * 24 * time.Hour), classTooOld, "sent 8d ago, longer than receipts are kept (--retention 7d)"},
		{"receipt, same payload", rec(idem.StatusCompleted, 1, fp, -time.Hour, week), true, now, classDone, "a receipt with the same payload"},
		{"receipt, no fingerprint", rec(idem.StatusCompleted, 1, "", -time.Hour, week), true, now, classDone, "same payload"},
		{"receipt, another payload", rec(idem.StatusCompleted, 1, other, -time.Hour, week), true, now, classPoison, "payload mismatch"},
		{"failed, fewer than max", rec(idem.StatusFailed, 4, fp, -time.Hour, week), true, now, classNotDone, "failed 4 times (last: *net.OpError, a Go type: the reason is only in the consumer's log), fewer than 5"},
		{"failed every time", rec(idem.StatusFailed, 5, fp, -time.Hour, week), true, now, classPoison, "redrive with --max-attempts 6"},
		{"failed, another payload", rec(idem.StatusFailed, 1, other, -time.Hour, week), true, now, classNotDone, "failed once"},
		{"lease live", rec(idem.StatusInProgress, 1, fp, time.Minute, week), true, now, classInProgress, "until 2026-11-24T02:01:00Z"},
		{"unconfirmed", rec(idem.StatusInProgress, 1, fp, -time.Minute, week), true, now, classUnconfirmed, "`idemctl resolve`"},
		{"expired receipt, same payload", rec(idem.StatusCompleted, 1, fp, -week, -time.Hour), true, now, classDone, "expired at 2026-11-24T01:00:00Z but is still readable"},
		{"expired receipt, another payload", rec(idem.StatusCompleted, 1, other, -week, -time.Hour), true, now, classPoison, "expired receipt"},
		{"expired failure", rec(idem.StatusFailed, 9, fp, -week, -time.Hour), true, now, classNotDone, "FAILED record expired"},
		{"expired unconfirmed", rec(idem.StatusInProgress, 1, fp, -week, -time.Hour), true, now, classUnconfirmed, "expired unconfirmed"},
		{"unknown status", rec("DONE", 1, fp, -time.Hour, week), true, now, classPoison, `status "DONE"`},
	} {
		v := s.judge(tc.rec, tc.found, fp, tc.sentAt, now)
		if v.class != tc.class || !strings.Contains(v.reason, tc.reason) {
			t.Errorf("%s: %s (%s); want %s saying %q", tc.name, v.class, v.reason, tc.class, tc.reason)
		}
	}
}

// TestSorterCopies: the same key twice in one run goes back once; the
// other copy waits (or, with another payload, is poison).
func TestSorterCopies(t *testing.T) {
	reads := 0
	s := &sorter{
		keyOf:      consumer.KeyField("orderId"),
		storageKey: func(k string) (string, error) { return "orders#" + k, nil },
		get: func(context.Context, string) (idem.Record, bool, error) {
			reads++
			return idem.Record{}, false, nil
		},
		maxAttempts: 5, moving: map[string]string{},
	}
	now := time.Now()
	for i, tc := range []struct {
		body  string
		class class
	}{
		{body("a", 0), classNotDone},
		{body("a", 0), classCopy},
		{body("a", 1), classPoison},
		{body("b", 0), classNotDone},
		{`{"amount":1}`, classMalformed},
		{"<xml/>", classMalformed},
		{`{"orderId":""}`, classMalformed},
	} {
		v, err := s.sort(t.Context(), message{id: "m", body: tc.body, sentAt: now}, now)
		if err != nil || v.class != tc.class {
			t.Errorf("message %d (%s): %s, %v; want %s", i, tc.body, v.class, err, tc.class)
		}
	}
	if reads != 2 {
		t.Errorf("%d record reads; want 2 (a copy needs none)", reads)
	}
}
