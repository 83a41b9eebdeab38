package main

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// Remote effects: an UNKNOWN record (the last attempt's effect failed
// without saying whether it took place) and a HELD one (an unknown outcome
// the consumer's policy parked until an operator settles it).

// TestInspectRemoteStates: each is a state of its own, says what comes
// next, and what redrive does with its message in the DLQ: a held key's
// is left until it is settled, an unknown one's goes back to be
// reconciled. A table whose sampled record is HELD is a receipt table.
func TestInspectRemoteStates(t *testing.T) {
	h := newHarness(t)
	h.put("parked", h.held("parked", 2))
	h.put("unsure", h.unknown("unsure", 1))
	h.sqs.add(h.dlqURL, body("parked", 0), h.now.Add(-time.Hour), nil)
	h.sqs.add(h.dlqURL, body("unsure", 0), h.now.Add(-time.Hour), nil)

	out, code := h.inspect("parked", "unsure")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, h.errOut.String())
	}
	parked, unsure := out.Keys[0], out.Keys[1]
	if parked.State != "held" || parked.Status != "HELD" || parked.Attempts != 2 || parked.RetentionLeftSeconds != nil ||
		!strings.Contains(parked.Meaning, "never run again until you settle it: look it up at the remote system by its key, then `idemctl resolve parked --done` or `--not-done`") ||
		!strings.Contains(parked.Meaning, "in the DLQ: `idemctl redrive` leaves it (held: settle it first with idemctl resolve") {
		t.Errorf("held: %+v", parked)
	}
	if r := parked.DLQMessages[0].Redrive; r == nil || r.Class != "held" || r.Action != "leave" || !strings.HasPrefix(r.Reason, "held: settle it first with idemctl resolve") {
		t.Errorf("held: redrive %+v", r)
	}
	if unsure.State != "unknown" ||
		!strings.HasPrefix(unsure.Meaning, "unknown: the last attempt's effect failed without saying whether it took place (1 attempt, last: provider-timeout)") ||
		!strings.Contains(unsure.Meaning, "`idemctl redrive` sends it back, and the next delivery asks the partner (reconcile) or follows the consumer's policy") {
		t.Errorf("unknown: %+v", unsure)
	}
	if r := unsure.DLQMessages[0].Redrive; r == nil || r.Class != "not-done" || r.Action != "move" {
		t.Errorf("unknown: redrive %+v", r)
	}

	if code := h.run("inspect", "parked", "--stack", testStack); code != exitOK ||
		!strings.Contains(h.out.String(), "HELD, 2 attempt(s)") ||
		!strings.Contains(h.out.String(), "none: a held record never expires, until it is settled") {
		t.Errorf("table:\n%s", h.out.String())
	}
}

// TestInspectTookOver: an attempt that took over an unknown outcome keeps
// the last error of the attempt before it; inspect says whose it is.
func TestInspectTookOver(t *testing.T) {
	h := newHarness(t)
	busy := h.inProgress("busy", 4*time.Minute)
	busy.PrevStatus, busy.LastError = idem.StatusUnknown, "provider-timeout"
	h.put("busy", busy)
	var out struct {
		Keys []struct{ PrevStatus, LastError string }
	}
	h.ok(&out, "inspect", "busy")
	if k := out.Keys[0]; k.PrevStatus != "UNKNOWN" || k.LastError != "provider-timeout" {
		t.Errorf("json: %+v", k)
	}
	h.run("inspect", "busy", "--stack", testStack)
	if !strings.Contains(h.out.String(), "took over   a record left UNKNOWN (the last error is that attempt's)") {
		t.Errorf("table:\n%s", h.out.String())
	}
}

// TestJudgeRemote: an UNKNOWN record is sorted like a FAILED one, sent
// back below the poison threshold (the next delivery reconciles); a HELD
// one is left while held, whatever its attempts.
func TestJudgeRemote(t *testing.T) {
	now := time.Date(2026, 11, 24, 2, 0, 0, 0, time.UTC)
	fp := idem.Fingerprint([]byte("payload"))
	s := &sorter{maxAttempts: 5, retention: 7 * 24 * time.Hour}
	rec := func(st idem.Status, attempts int, expiresAt time.Time) idem.Record {
		return idem.Record{Status: st, Attempts: attempts, Fingerprint: fp, LastError: "provider-timeout", ExpiresAt: expiresAt}
	}
	for _, tc := range []struct {
		name   string
		rec    idem.Record
		class  class
		reason string
	}{
		{"unknown", rec(idem.StatusUnknown, 2, now.Add(time.Hour)), classNotDone, "failed 2 times, the last without saying whether the effect took place (last: provider-timeout), fewer than 5: the next delivery asks the partner (reconcile)"},
		{"unknown once", rec(idem.StatusUnknown, 1, now.Add(time.Hour)), classNotDone, "failed once, without saying whether the effect took place (last: provider-timeout), fewer than 5"},
		{"unknown every time", rec(idem.StatusUnknown, 5, now.Add(time.Hour)), classPoison, "failed every time it ran, 5 times"},
		{"expired unknown", rec(idem.StatusUnknown, 9, now.Add(-time.Hour)), classNotDone, "its UNKNOWN record expired at 2026-11-24T01:00:00Z: whether the effect took place is unknown"},
		{"held", rec(idem.StatusHeld, 2, time.Time{}), classHeld, "held: settle it first with idemctl resolve"},
		{"held, many attempts", rec(idem.StatusHeld, 7, time.Time{}), classHeld, "held: settle it first with idemctl resolve"},
	} {
		v := s.judge(tc.rec, true, fp, now, now)
		if v.class != tc.class || !strings.Contains(v.reason, tc.reason) {
			t.Errorf("%s: %s (%s); want %s saying %q", tc.name, v.class, v.reason, tc.class, tc.reason)
		}
	}
	if actionOf[classHeld] != actLeave {
		t.Errorf("held: %s, want leave", actionOf[classHeld])
	}
}

// TestRedriveHeldKey: a held key's message stays in the DLQ while it is
// held; once resolved, redrive deletes it (--done) or sends it back
// (--not-done), and an unknown key's message goes back at once.
func TestRedriveHeldKey(t *testing.T) {
	for _, tc := range []struct {
		decision, class, action string
		queued                  int
	}{
		{"--done", "done", "delete", 1},
		{"--not-done", "not-done", "move", 2},
	} {
		t.Run(tc.decision, func(t *testing.T) {
			h := newHarness(t)
			h.put("parked", h.held("parked", 2))
			h.put("unsure", h.unknown("unsure", 1))
			parked := h.sqs.add(h.dlqURL, body("parked", 0), h.now.Add(-time.Hour), nil)
			unsure := h.sqs.add(h.dlqURL, body("unsure", 0), h.now.Add(-time.Hour), nil)

			var out redriveOut
			h.ok(&out, "redrive")
			got := map[string]string{}
			for _, m := range out.Messages {
				got[m.MessageID] = m.Class + "/" + m.Action
				if m.MessageID == parked && !strings.HasPrefix(m.Reason, "held: settle it first with idemctl resolve") {
					t.Errorf("held: reason %q", m.Reason)
				}
			}
			if got[parked] != "held/leave" || got[unsure] != "not-done/move" || out.Counts["held"] != 1 {
				t.Fatalf("redrive: %v, counts %v; want the held key's message left, the unknown one's moved", got, out.Counts)
			}
			if queued, _ := h.sqs.bodies(h.queueURL); len(queued) != 1 || queued[0] != body("unsure", 0) {
				t.Fatalf("sent back %q; want only the unknown key's message", queued)
			}
			if code := h.run("redrive", "--stack", testStack); code != 0 || !strings.Contains(h.out.String(), "held 1") {
				t.Errorf("table:\n%s", h.out.String())
			}

			h.ok(nil, "resolve", "parked", tc.decision, "--yes")
			h.ok(&out, "redrive")
			if len(out.Messages) != 1 || out.Messages[0].MessageID != parked || out.Messages[0].Class != tc.class || out.Messages[0].Action != tc.action || !out.Messages[0].Done {
				t.Fatalf("redrive after resolve %s: %+v", tc.decision, out.Messages)
			}
			if dlq, _ := h.sqs.bodies(h.dlqURL); len(dlq) != 0 {
				t.Errorf("the DLQ still holds %q", dlq)
			}
			if queued, _ := h.sqs.bodies(h.queueURL); len(queued) != tc.queued {
				t.Errorf("queue holds %d messages, want %d", len(queued), tc.queued)
			}
		})
	}
}

// TestResolveRemote: a HELD or UNKNOWN record is settled either way,
// fenced by the record as read. --done writes the receipt under
// idemctl's own token; --not-done a definite failure (FAILED), so the
// next copy runs the effect without reconciling. Both keep the attempts;
// a held record, which has no expiry, gets the consumer's retention.
func TestResolveRemote(t *testing.T) {
	const week = 7 * 24 * time.Hour
	for _, tc := range []struct {
		name, flag string
		rec        func(h *harness) idem.Record
		args       []string
		status     string
		expires    time.Duration // from now
		say        []string
	}{
		{"held, done", "--done", func(h *harness) idem.Record { return h.held("k", 2) }, nil, "COMPLETED", week, []string{
			"will write COMPLETED (the receipt: every later copy of the key is skipped until 2026-12-01T02:00:00Z, --retention from now: the record had no expiry), only if the record is still HELD with lease lease-k…, 2 attempt(s)",
			"written: COMPLETED — every later copy of the key is skipped; if its messages are in the DLQ, `idemctl redrive` deletes them as done",
		}},
		{"held, not done", "--not-done", func(h *harness) idem.Record { return h.held("k", 2) }, []string{"--retention", "48h"}, "FAILED", 48 * time.Hour, []string{
			"will write FAILED (released as a definite failure: the next copy of the key runs the effect without reconciling; kept until 2026-11-26T02:00:00Z, --retention from now: the record had no expiry), only if the record is still HELD",
			"written: FAILED — the next copy of the key runs the effect without reconciling; if its messages are in the DLQ, `idemctl redrive` sends them back",
		}},
		{"unknown, done", "--done", func(h *harness) idem.Record { return h.unknown("k", 1) }, nil, "COMPLETED", week, []string{
			"only if the record is still UNKNOWN with lease lease-k…, 1 attempt(s)", "written: COMPLETED",
		}},
		{"unknown, not done", "--not-done", func(h *harness) idem.Record { return h.unknown("k", 1) }, nil, "FAILED", week, []string{
			"released as a definite failure", "written: FAILED — the next copy of the key runs the effect without reconciling",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			rec := tc.rec(h)
			h.put("k", rec)
			args := append([]string{"resolve", "k", tc.flag, "--yes", "--stack", testStack}, tc.args...)
			if code := h.run(args...); code != exitOK {
				t.Fatalf("exit %d: %s", code, h.errOut.String())
			}
			for _, want := range tc.say {
				if !strings.Contains(h.out.String(), want) {
					t.Errorf("no %q in\n%s", want, h.out.String())
				}
			}
			item := h.record("k")
			wantExpires := encode(idem.Record{ExpiresAt: h.now.Add(tc.expires)})[schema.TTL].(*types.AttributeValueMemberN).Value
			if attrS(item, schema.Status) != tc.status || attrN(item, schema.Attempts) != encode(rec)[schema.Attempts].(*types.AttributeValueMemberN).Value ||
				attrN(item, schema.TTL) != wantExpires {
				t.Fatalf("written: %v; want %s, the attempts kept, expiring at %s", item, tc.status, wantExpires)
			}
			switch tc.status {
			case "COMPLETED":
				if !strings.HasPrefix(attrS(item, schema.Lease), "idemctl-") || attrS(item, schema.LastError) != "" {
					t.Errorf("receipt: %v", item)
				}
			case "FAILED":
				if attrS(item, schema.Lease) != rec.Lease || attrS(item, schema.LastError) != notDoneReason {
					t.Errorf("released: %v", item)
				}
			}
		})
	}
}

// TestResolveHeldChanged: another operator settled the held key between
// this resolve's read and its write; nothing is written over theirs.
func TestResolveHeldChanged(t *testing.T) {
	h := newHarness(t)
	held := h.held("k", 2)
	h.put("k", held)
	theirs := held
	theirs.Status, theirs.Lease, theirs.ExpiresAt, theirs.UpdatedAt = idem.StatusCompleted, "idemctl-theirs", h.now.Add(time.Hour), h.now
	h.ddb.beforeUpdate = func() { h.put("k", theirs) }
	h.fails(exitRuntime, "the record changed since it was read: it is now completed", "resolve", "k", "--not-done", "--yes")
	if attrS(h.record("k"), schema.Lease) != "idemctl-theirs" {
		t.Fatalf("overwritten: %v", h.record("k"))
	}
	h.fails(exitUsage, "--retention 0s: must be positive", "resolve", "k", "--done", "--retention", "0s")
}
