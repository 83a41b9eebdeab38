package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestInspectOwnReceives: SQS moved a message to the DLQ after the
// consumer received it 5 times, the queue's maxReceiveCount. Every read
// of the DLQ is a receive too,
// and SQS counts it: inspect must never show more receives by the
// consumer than there were, and must say where the rest come from.
func TestInspectOwnReceives(t *testing.T) {
	h := newHarness(t)
	h.put("broken", h.failed("broken", 3))
	id := h.sqs.add(h.dlqURL, body("broken", 0), h.now.Add(-time.Hour), nil)
	h.sqs.message(h.dlqURL, id).receives = 5 // the consumer's, on the queue

	// Each run reads the message once more: SQS's count grows by one per
	// run, and the consumer's bound is that count less this run's read.
	for run := 1; run <= 3; run++ {
		count, atMost := 5+run, 5+run-1
		if run%2 == 1 {
			out, _ := h.inspect("broken")
			m := out.Keys[0].DLQMessages[0]
			if m.Receives != count || m.IdemctlReceives != 1 || m.ConsumerReceivesAtMost == nil || *m.ConsumerReceivesAtMost != atMost {
				t.Errorf("run %d: receives %d, idemctl's %d, the consumer's at most %v; want %d, 1, %d", run, m.Receives, m.IdemctlReceives, m.ConsumerReceivesAtMost, count, atMost)
			}
			continue
		}
		if code := h.run("inspect", "broken", "--stack", testStack); code != exitOK {
			t.Fatalf("run %d: exit %d: %s", run, code, h.errOut.String())
		}
		text := h.out.String()
		if strings.Contains(text, fmt.Sprintf("%d receives", count)) || strings.Contains(text, fmt.Sprintf("%d receives", atMost)) {
			t.Errorf("run %d shows SQS's count as the consumer's receives:\n%s", run, text)
		}
		want := fmt.Sprintf("receive count %d with this read: at most %d by the consumer, fewer if the DLQ was read before (the queue dead-letters a message after 5)", count, atMost)
		if !strings.Contains(text, want) {
			t.Errorf("run %d: no %q in\n%s", run, want, text)
		}
	}

	// A message sent to the DLQ directly: this read is its only receive.
	h.put("direct", h.failed("direct", 1))
	h.sqs.add(h.dlqURL, body("direct", 0), h.now, nil)
	h.run("inspect", "direct", "--stack", testStack)
	if !strings.Contains(h.out.String(), "receive count 1 with this read: none by the consumer)") {
		t.Errorf("a message the consumer never received:\n%s", h.out.String())
	}

	// A message SQS gave no count for: nothing is claimed.
	h.put("quiet", h.failed("quiet", 1))
	h.sqs.add(h.dlqURL, body("quiet", 0), h.now, nil)
	h.sqs.noReceiveCount = true
	h.run("inspect", "quiet", "--stack", testStack)
	if !strings.Contains(h.out.String(), "receive count unknown") {
		t.Errorf("without ApproximateReceiveCount:\n%s", h.out.String())
	}
}

// TestInspectSaysWhatRedriveDoes: a key whose message is in the DLQ is
// not delivered again; inspect says what `idemctl redrive` does with the
// message instead — and it is what a dry run of redrive decides.
func TestInspectSaysWhatRedriveDoes(t *testing.T) {
	h := newHarness(t)
	h.put("flaky", h.failed("flaky", 2))
	h.put("poison", h.failed("poison", 5)) // the queue's maxReceiveCount
	h.put("done", h.completed("done"))
	h.put("reused", h.completed("reused"))
	h.put("stuck", h.inProgress("stuck", -time.Minute))
	h.put("busy", h.inProgress("busy", time.Minute))
	h.put("waiting", h.failed("waiting", 1)) // its message is still in the queue
	for _, m := range []struct {
		key     string
		variant int
	}{{"flaky", 0}, {"poison", 0}, {"done", 0}, {"reused", 1}, {"stuck", 0}, {"busy", 0}, {"new", 0}, {"new", 0}} {
		h.sqs.add(h.dlqURL, body(m.key, m.variant), h.now.Add(-time.Hour), nil)
	}
	keys := []string{"flaky", "poison", "done", "reused", "stuck", "busy", "new", "waiting"}
	out, _ := h.inspect(keys...)
	says := map[string][]string{
		"flaky":   {"failed 2 times (last: *net.OpError); in the DLQ, so not delivered again: `idemctl redrive` sends it back, and the next delivery runs it again"},
		"poison":  {"in the DLQ, so not delivered again: `idemctl redrive` leaves it (poison: failed every time it ran, 5 times", "--max-attempts 6"},
		"done":    {"a copy is skipped; in the DLQ: `idemctl redrive` deletes it as done"},
		"reused":  {"in the DLQ: `idemctl redrive` leaves it (poison: a receipt for this key with another payload"},
		"stuck":   {"in the DLQ: `idemctl redrive` leaves it (unconfirmed: unconfirmed since"},
		"busy":    {"in the DLQ: `idemctl redrive` leaves it (in-progress: an attempt holds the key until"},
		"new":     {"in the DLQ: `idemctl redrive` sends m-07 back, and the next delivery runs the effect; leaves m-08 (copy:"},
		"waiting": {"failed once (last: *net.OpError): the next delivery runs it again"},
	}
	for i, k := range out.Keys {
		for _, want := range says[keys[i]] {
			if !strings.Contains(k.Meaning, want) {
				t.Errorf("%s: %q does not say %q", keys[i], k.Meaning, want)
			}
		}
		if keys[i] == "waiting" && strings.Contains(k.Meaning, "redrive") {
			t.Errorf("waiting, not in the DLQ: %q", k.Meaning)
		}
	}

	// Without a whole read of the DLQ, nobody knows whether a delivery
	// comes: that is said too (inspect --no-dlq, resolve).
	noDLQ, _ := h.inspect("flaky", "--no-dlq")
	if m := noDLQ.Keys[0].Meaning; !strings.Contains(m, "the next delivery runs it again — if its message is in the DLQ, only once `idemctl redrive` sends it back") {
		t.Errorf("flaky, DLQ not read: %q", m)
	}

	var dry redriveOut
	h.ok(&dry, "redrive", "--dry-run")
	decided := map[string][2]string{}
	for _, m := range dry.Messages {
		decided[m.MessageID] = [2]string{m.Class, m.Action}
	}
	for i, k := range out.Keys {
		for _, m := range k.DLQMessages {
			if m.Redrive == nil || [2]string{m.Redrive.Class, m.Redrive.Action} != decided[m.MessageID] {
				t.Errorf("%s: inspect says redrive does %+v with %s, redrive --dry-run %v", keys[i], m.Redrive, m.MessageID, decided[m.MessageID])
			}
		}
	}

	// Without the queue, redrive's poison threshold (its maxReceiveCount)
	// is unknown: inspect says what it depends on instead of guessing.
	delete(h.cfn.stacks[testStack], "QueueUrl")
	out, _ = h.inspect("flaky")
	if m := out.Keys[0].Meaning; !strings.Contains(m, "`idemctl redrive` sends it back if it failed fewer times than the queue's maxReceiveCount, else leaves it as poison") {
		t.Errorf("flaky without the queue: %q", m)
	}
}

// TestInspectUnknownKey: a key with no record is "an unknown key" of the
// documented exit 1 — after every key is printed, on stdout, as usual.
func TestInspectUnknownKey(t *testing.T) {
	h := newHarness(t)
	h.put("done", h.completed("done"))
	h.put("old", h.expired("old", "COMPLETED"))

	out, code := h.inspect("done", "never", "old")
	line := h.errOut.String()
	if code != exitRuntime || strings.Count(line, "\n") != 1 || !strings.Contains(line, "not found: no record for never in namespace orders of table receipts") {
		t.Errorf("inspect of a key never seen: exit %d, stderr %q; want exit 1 and one line naming it", code, line)
	}
	if len(out.Keys) != 3 || out.Keys[1].State != "absent" {
		t.Errorf("not every key printed: %+v", out.Keys)
	}

	h.run("inspect", "never", "nobody", "--stack", testStack)
	if !strings.Contains(h.errOut.String(), "no record for 2 of 2 keys (never, nobody)") || !strings.Contains(h.out.String(), "absent: no record") {
		t.Errorf("two unknown keys: %q\n%s", h.errOut.String(), h.out.String())
	}
	h.run("inspect", "--storage-key", h.guard.StorageKey("never"), "--stack", testStack)
	if !strings.Contains(h.errOut.String(), "no record for "+h.guard.StorageKey("never")) {
		t.Errorf("a storage key: %q", h.errOut.String())
	}

	// An expired record exists: it counts as absent for the consumer, but
	// the key is known.
	if _, code := h.inspect("done", "old"); code != exitOK {
		t.Errorf("known keys: exit %d: %s", code, h.errOut.String())
	}
}
