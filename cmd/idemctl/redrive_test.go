package main

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

type redriveOut struct {
	DryRun, Complete bool
	MaxAttempts      int
	Messages         []struct {
		MessageID, StorageKey, Class, Action, Reason, Error string
		Done                                                bool
		Body                                                *string
	}
	Counts map[string]int
}

// deadLetters fills the DLQ with one message of each kind and returns
// their ids by label.
func deadLetters(h *harness) map[string]string {
	h.put("done", h.completed("done"))
	h.put("reused", h.completed("reused"))
	h.put("flaky", h.failed("flaky", 2))
	h.put("poison", h.failed("poison", 5))
	h.put("busy", h.inProgress("busy", time.Minute))
	h.put("stuck", h.inProgress("stuck", -time.Minute))
	h.put("old", h.expired("old", idem.StatusCompleted))
	recent, ancient := h.now.Add(-time.Hour), h.now.Add(-8*24*time.Hour)
	ids := map[string]string{}
	for _, m := range []struct {
		label, body string
		sentAt      time.Time
		attrs       map[string]string
	}{
		{"done", body("done", 0), recent, nil},
		{"reused", body("reused", 1), recent, nil},
		{"new", "{}", recent, map[string]string{"orderId": "new", "tenant": "t1"}},
		{"new-copy", "{}", recent, map[string]string{"orderId": "new"}},
		{"flaky", body("flaky", 0), recent, nil},
		{"poison", body("poison", 0), recent, nil},
		{"busy", body("busy", 0), recent, nil},
		{"stuck", body("stuck", 0), recent, nil},
		{"old", body("old", 0), ancient, nil},
		{"lost", body("lost", 0), ancient, nil},
		{"malformed", "<xml/>", recent, nil},
		{"long-key", `{"orderId":"` + strings.Repeat("x", 2000) + `"}`, recent, nil},
	} {
		ids[m.label] = h.sqs.add(h.dlqURL, m.body, m.sentAt, m.attrs)
	}
	h.sqs.message(h.dlqURL, ids["new"]).system["AWSTraceHeader"] = "Root=1-5759e988-bd862e3fe1be46a994272793"
	return ids
}

var wantClass = map[string]string{
	"done": "done", "reused": "poison", "new": "not-done", "new-copy": "copy", "flaky": "not-done",
	"poison": "poison", "busy": "in-progress", "stuck": "unconfirmed", "old": "done", "lost": "too-old",
	"malformed": "malformed", "long-key": "malformed",
}

func classes(t *testing.T, out redriveOut, ids map[string]string) {
	t.Helper()
	byID := map[string]string{}
	for _, m := range out.Messages {
		byID[m.MessageID] = m.Class
	}
	for label, id := range ids {
		if byID[id] != wantClass[label] {
			t.Errorf("%s: %q, want %q", label, byID[id], wantClass[label])
		}
	}
}

func TestRedriveDryRun(t *testing.T) {
	h := newHarness(t)
	ids := deadLetters(h)
	table := h.ddb.items
	before, _ := h.sqs.bodies(h.dlqURL)
	var out redriveOut
	h.ok(&out, "redrive", "--dry-run")
	classes(t, out, ids)
	if !out.DryRun || !out.Complete || out.MaxAttempts != 5 || out.Counts["move"] != 2 || out.Counts["delete"] != 2 || out.Counts["leave"] != 8 || out.Counts["moved"]+out.Counts["deleted"] != 0 {
		t.Errorf("dry run: %+v", out)
	}
	after, hidden := h.sqs.bodies(h.dlqURL)
	if queued, _ := h.sqs.bodies(h.queueURL); !slices.Equal(before, after) || hidden != 0 || len(queued) != 0 || !reflect.DeepEqual(table, h.ddb.items) || h.ddb.count("UpdateItem") != 0 {
		t.Fatalf("a dry run changed something: DLQ %d→%d (%d hidden), queue %d", len(before), len(after), hidden, len(queued))
	}
	for _, m := range out.Messages {
		if m.Body != nil || strings.Contains(m.StorageKey, "new") {
			t.Errorf("personal data printed: %+v", m)
		}
	}
}

// TestRedrive: done deleted, not done sent back as it was (body,
// attributes, trace header) then deleted, the rest left and visible.
func TestRedrive(t *testing.T) {
	h := newHarness(t)
	ids := deadLetters(h)
	var out redriveOut
	h.ok(&out, "redrive")
	classes(t, out, ids)
	if out.Counts["moved"] != 2 || out.Counts["deleted"] != 2 || out.Counts["leave"] != 8 || out.Counts["failed"] != 0 {
		t.Errorf("counts %v", out.Counts)
	}
	left, hidden := h.sqs.bodies(h.dlqURL)
	if len(left) != 8 || hidden != 0 {
		t.Errorf("DLQ: %d left, %d hidden; want 8 visible", len(left), hidden)
	}
	queued, _ := h.sqs.bodies(h.queueURL)
	slices.Sort(queued)
	if !slices.Equal(queued, []string{body("flaky", 0), "{}"}) {
		t.Fatalf("sent back: %q", queued)
	}
	moved := h.sqs.queues[h.queueURL].msgs
	i := slices.IndexFunc(moved, func(m *fakeMessage) bool { return m.body == "{}" })
	if m := moved[i]; aws.ToString(m.attrs["orderId"].StringValue) != "new" || aws.ToString(m.attrs["tenant"].StringValue) != "t1" ||
		m.system["AWSTraceHeader"] != "Root=1-5759e988-bd862e3fe1be46a994272793" {
		t.Errorf("sent back without its attributes: %+v", m)
	}

	// The consumer runs the key; the copy left behind is then done.
	h.put("new", idem.Record{Status: idem.StatusCompleted, Lease: "l", Attempts: 1, ExpiresAt: h.now.Add(time.Hour)})
	var second redriveOut
	h.ok(&second, "redrive")
	if second.Counts["deleted"] != 1 || second.Counts["moved"] != 0 || len(second.Messages) != 8 {
		t.Errorf("second run: %v", second.Counts)
	}
	if code := h.run("redrive", "--stack", testStack); code != 0 || !strings.Contains(h.out.String(), "read 7 message(s) (the whole DLQ)") || !strings.Contains(h.out.String(), "moved 0, deleted 0, left 7, failed 0") {
		t.Errorf("third run: %s", h.out.String())
	}
}

// TestRedriveCopyProcessedMeanwhile: the consumer processes a key sent
// back while the run goes on; its other copy still waits for the next run
// rather than being read against a record that is changing.
func TestRedriveCopyProcessedMeanwhile(t *testing.T) {
	h := newHarness(t)
	h.sqs.add(h.dlqURL, body("a", 0), h.now, nil)
	h.sqs.add(h.dlqURL, body("a", 0), h.now, nil)
	h.sqs.afterSend = func(string) { h.put("a", h.completed("a")) }
	var out redriveOut
	h.ok(&out, "redrive")
	if out.Messages[0].Class != "not-done" || out.Messages[1].Class != "copy" {
		t.Fatalf("%+v", out.Messages)
	}
	h.sqs.afterSend = nil
	var second redriveOut
	h.ok(&second, "redrive")
	if len(second.Messages) != 1 || second.Messages[0].Class != "done" || !second.Messages[0].Done {
		t.Fatalf("second run: %+v", second.Messages)
	}
}

// TestRedriveSendFails: nothing is deleted that was not sent back; the run
// says so and exits 1.
func TestRedriveSendFails(t *testing.T) {
	h := newHarness(t)
	h.sqs.add(h.dlqURL, body("a", 0), h.now, nil)
	h.sqs.add(h.dlqURL, body("a", 0), h.now, nil)
	h.sqs.fail["SendMessage"] = errFake
	code := h.run("redrive", "--stack", testStack, "--output", "json")
	if code != exitRuntime || !strings.Contains(h.errOut.String(), "could not be moved or deleted") {
		t.Fatalf("exit %d: %s", code, h.errOut.String())
	}
	if left, hidden := h.sqs.bodies(h.dlqURL); len(left) != 2 || hidden != 0 {
		t.Fatalf("DLQ: %d, %d hidden", len(left), hidden)
	}
	// The first copy was not sent, so the second one goes instead.
	if !strings.Contains(h.out.String(), `"class": "not-done"`) || strings.Contains(h.out.String(), `"class": "copy"`) {
		t.Errorf("%s", h.out.String())
	}
}

// TestRedriveDeleteFails: sent back but not deleted — the copy stays in
// the DLQ, visible, and the run exits 1; nothing is lost.
func TestRedriveDeleteFails(t *testing.T) {
	h := newHarness(t)
	h.sqs.add(h.dlqURL, body("a", 0), h.now, nil)
	h.sqs.fail["DeleteMessage"] = errFake
	h.fails(exitRuntime, "nothing is lost, run redrive again", "redrive")
	queued, _ := h.sqs.bodies(h.queueURL)
	left, hidden := h.sqs.bodies(h.dlqURL)
	if len(queued) != 1 || len(left) != 1 || hidden != 0 {
		t.Fatalf("queue %d, DLQ %d (%d hidden)", len(queued), len(left), hidden)
	}
}

func TestRedriveMax(t *testing.T) {
	h := newHarness(t)
	for i := range 25 {
		h.sqs.add(h.dlqURL, body("k", i), h.now, map[string]string{"orderId": "k" + strings.Repeat("x", i)})
	}
	var out redriveOut
	h.ok(&out, "redrive", "--max", "12", "--dry-run")
	if len(out.Messages) != 12 || out.Complete {
		t.Fatalf("--max 12: %d handled, complete %v", len(out.Messages), out.Complete)
	}
	if _, hidden := h.sqs.bodies(h.dlqURL); hidden != 0 {
		t.Fatalf("%d left hidden", hidden)
	}
}

// TestRedriveQueues: the DLQ must be the queue's, and redrive needs both
// queues and the key field.
func TestRedriveQueues(t *testing.T) {
	h := newHarness(t)
	stray := h.sqs.addQueue("stray", "", 0)
	h.fails(exitRuntime, "is not the dead-letter queue of", "redrive", "--dlq-url", stray)
	h.fails(exitRuntime, "has no redrive policy", "redrive", "--queue-url", stray)
	delete(h.cfn.stacks[testStack], "Key")
	h.fails(exitUsage, "pass --key-field", "redrive")
	delete(h.cfn.stacks[testStack], "QueueUrl")
	h.fails(exitUsage, "no queue", "redrive", "--key-field", "orderId")
}

// TestReaderSkipsSeen: a message returned again (its hold ran out) is not
// handled twice, and is shown again at the end.
func TestReaderSkipsSeen(t *testing.T) {
	h := newHarness(t)
	a := h.sqs.add(h.dlqURL, "a", h.now, nil)
	h.sqs.add(h.dlqURL, "b", h.now, nil)
	r := newReader(h.sqs, h.dlqURL, time.Minute)
	first, err := r.next(t.Context(), 1)
	if err != nil || len(first) != 1 || first[0].id != a {
		t.Fatal(first, err)
	}
	h.now = h.now.Add(2 * time.Minute) // a's hold ran out
	second, err := r.next(t.Context(), 10)
	if err != nil || len(second) != 1 || second[0].body != "b" || len(r.again) != 1 {
		t.Fatalf("%+v %v, again %d", second, err, len(r.again))
	}
	if err := r.release(t.Context(), append(second, r.again...)); err != nil {
		t.Fatal(err)
	}
	if _, hidden := h.sqs.bodies(h.dlqURL); hidden != 0 {
		t.Fatalf("%d hidden", hidden)
	}
	h.sqs.fail["ChangeMessageVisibilityBatch"] = errFake
	if err := r.release(t.Context(), second); err == nil || !strings.Contains(err.Error(), "stay hidden") {
		t.Fatalf("release error: %v", err)
	}
}
