package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

type inspectOut struct {
	DLQ struct {
		URL               string
		Checked, Complete bool
		MessagesRead      int
		Note              string
	}
	Keys []struct {
		Key, StorageKey, State, Meaning, Status, LastError, LastErrorNote string
		Attempts, ResultBytes                                             int
		LeaseLeftSeconds, RetentionLeftSeconds                            *int64
		DLQMessages                                                       []struct {
			MessageID                 string
			Receives, IdemctlReceives int
			ConsumerReceivesAtMost    *int
			Body                      *string
			Redrive                   *struct{ Class, Action, Reason string }
		}
	}
}

// inspect runs inspect with --stack and --output json, whatever its exit
// code (a key without a record exits 1), and decodes what it printed.
func (h *harness) inspect(args ...string) (inspectOut, int) {
	h.t.Helper()
	code := h.run(append(append([]string{"inspect"}, args...), "--stack", testStack, "--output", "json")...)
	var out inspectOut
	if err := json.Unmarshal(h.out.Bytes(), &out); err != nil {
		h.t.Fatalf("inspect %v: exit %d, %v\n%s%s", args, code, err, h.out.String(), h.errOut.String())
	}
	return out, code
}

// TestInspect: every state in one call, each key's messages found in the
// DLQ by the consumer's key function (attribute or body field), and the
// DLQ left as it was: every message visible again, none deleted.
func TestInspect(t *testing.T) {
	h := newHarness(t)
	h.put("done", h.completed("done"))
	h.put("busy", h.inProgress("busy", 4*time.Minute))
	h.put("stuck", h.inProgress("stuck", -3*time.Minute))
	h.put("broken", h.failed("broken", 2))
	h.put("old", h.expired("old", "COMPLETED"))
	h.sqs.add(h.dlqURL, body("done", 0), h.now.Add(-time.Hour), nil)
	h.sqs.add(h.dlqURL, "not json", h.now, map[string]string{"orderId": "stuck"})
	h.sqs.add(h.dlqURL, body("stuck", 0), h.now, nil)
	h.sqs.add(h.dlqURL, "<xml/>", h.now, nil)

	out, code := h.inspect("done", "busy", "stuck", "broken", "old", "never")
	if code != exitRuntime || !strings.Contains(h.errOut.String(), "no record for never") {
		t.Errorf("a key without a record: exit %d, %s", code, h.errOut.String())
	}
	if !out.DLQ.Checked || !out.DLQ.Complete || out.DLQ.MessagesRead != 4 || out.DLQ.URL != h.dlqURL {
		t.Fatalf("DLQ: %+v", out.DLQ)
	}
	want := []struct {
		state string
		inDLQ int
	}{{"completed", 1}, {"in-progress", 0}, {"unconfirmed", 2}, {"failed", 0}, {"expired", 0}, {"absent", 0}}
	for i, k := range out.Keys {
		if k.State != want[i].state || len(k.DLQMessages) != want[i].inDLQ || k.StorageKey != h.guard.StorageKey(k.Key) {
			t.Errorf("%s: %s with %d DLQ messages; want %s with %d", k.Key, k.State, len(k.DLQMessages), want[i].state, want[i].inDLQ)
		}
		for _, m := range k.DLQMessages {
			if m.Body != nil {
				t.Errorf("%s: a body printed without --show-bodies", k.Key)
			}
		}
	}
	if k := out.Keys[1]; *k.LeaseLeftSeconds != 240 || *k.RetentionLeftSeconds != 7*24*3600 {
		t.Errorf("busy: lease left %d s, retention left %d s", *k.LeaseLeftSeconds, *k.RetentionLeftSeconds)
	}
	if k := out.Keys[3]; k.Attempts != 2 || k.LastError != "*net.OpError" || !strings.HasPrefix(k.Meaning, "failed 2 times") {
		t.Errorf("broken: %+v", k)
	}
	if all, hidden := h.sqs.bodies(h.dlqURL); len(all) != 4 || hidden != 0 {
		t.Fatalf("after inspect the DLQ holds %d messages, %d hidden; want 4 visible", len(all), hidden)
	}

	h.ok(&out, "inspect", "done", "--show-bodies")
	if b := out.Keys[0].DLQMessages[0].Body; b == nil || *b != body("done", 0) {
		t.Errorf("--show-bodies: %v", b)
	}
}

func TestInspectTable(t *testing.T) {
	h := newHarness(t)
	h.put("stuck", h.inProgress("stuck", -3*time.Minute))
	if code := h.run("inspect", "stuck", "--stack", testStack); code != 0 {
		t.Fatal(h.errOut.String())
	}
	for _, want := range []string{
		"stuck", h.guard.StorageKey("stuck"),
		"unconfirmed: the effect may have run, its receipt was not written (lease ended 3m ago)",
		"`idemctl resolve stuck --done` or `--not-done`",
		"IN_PROGRESS, 1 attempt(s)", "until 2026-11-24T01:57:00Z (3m ago)", "in DLQ", "no (read all 0 messages)",
	} {
		if !strings.Contains(h.out.String(), want) {
			t.Errorf("no %q in\n%s", want, h.out.String())
		}
	}
}

// TestInspectDLQNotChecked says why, and still answers for the record.
func TestInspectDLQNotChecked(t *testing.T) {
	h := newHarness(t)
	h.put("k", h.completed("k"))
	delete(h.cfn.stacks[testStack], "Key")
	var out inspectOut
	h.ok(&out, "inspect", "k")
	if out.DLQ.Checked || !strings.Contains(out.DLQ.Note, "no key field") {
		t.Errorf("no key field: %+v", out.DLQ)
	}
	h.ok(&out, "inspect", "k", "--no-dlq")
	if out.DLQ.Checked || !strings.Contains(out.DLQ.Note, "--no-dlq") {
		t.Errorf("--no-dlq: %+v", out.DLQ)
	}
	h.ok(&out, "inspect", "k", "--key-field", "orderId", "--max-peek", "1")
	if !out.DLQ.Checked {
		t.Errorf("--key-field: %+v", out.DLQ)
	}
}

// TestInspectBadDLQ: a URL that is no queue, a FIFO queue, a DLQ with a
// redrive policy of its own (a receive would move its messages on).
func TestInspectBadDLQ(t *testing.T) {
	h := newHarness(t)
	h.fails(exitRuntime, "no such queue", "inspect", "k", "--dlq-url", fakeAccount+"gone")
	h.fails(exitRuntime, "no such queue", "inspect", "k", "--dlq-url", "http://localhost:4566/queue/us-east-1/000000000000/gone")
	h.fails(exitUsage, "is not a queue URL", "inspect", "k", "--dlq-url", "orders-dlq")
	h.fails(exitUsage, "is not a queue URL", "inspect", "k", "--dlq-url", "https://sqs.eu-west-1.amazonaws.com/")
	h.fails(exitRuntime, "has a redrive policy of its own", "inspect", "k", "--dlq-url", h.queueURL)
	fifo := h.sqs.addQueue("orders-dlq.fifo", "", 0)
	h.sqs.queues[fifo].attrs["FifoQueue"] = "true"
	h.fails(exitRuntime, "is a FIFO queue", "inspect", "k", "--dlq-url", fifo)
}

// TestInspectPeekBounded: --max-peek stops the walk and says so; the
// messages read are visible again.
func TestInspectPeekBounded(t *testing.T) {
	h := newHarness(t)
	for i := range 25 {
		h.sqs.add(h.dlqURL, body("other", i), h.now, nil)
	}
	h.put("k", h.completed("k"))
	var out inspectOut
	h.ok(&out, "inspect", "k", "--max-peek", "12")
	if out.DLQ.Complete || out.DLQ.MessagesRead != 12 {
		t.Errorf("DLQ: %+v; want 12 read, not complete", out.DLQ)
	}
	if _, hidden := h.sqs.bodies(h.dlqURL); hidden != 0 {
		t.Errorf("%d messages left hidden", hidden)
	}
	h.run("inspect", "k", "--max-peek", "12", "--stack", testStack)
	if !strings.Contains(h.out.String(), "not among the first 12 messages read") {
		t.Error(h.out.String())
	}

	h.run("inspect", "other", "--stack", testStack)
	if !strings.Contains(h.out.String(), "yes, 25 message(s): m-01") || !strings.Contains(h.out.String(), "and 22 more (--output json lists them)") {
		t.Error(h.out.String())
	}
}
