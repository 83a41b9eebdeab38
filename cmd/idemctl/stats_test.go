package main

import (
	"strings"
	"testing"
	"time"
)

type statsOut struct {
	Records    map[string]int
	Queue, DLQ *struct {
		URL                      string
		Visible, InFlight        int
		OldestAgeSeconds         *int64
		OldestSource, OldestNote string
	}
}

// TestStats counts the namespace's records by state and reads the queues'
// depth; the oldest ages come from CloudWatch when it has them.
func TestStats(t *testing.T) {
	h := listTable(t)
	h.sqs.add(h.dlqURL, "x", h.now.Add(-90*time.Minute), nil)
	h.cw = &fakeCW{ages: map[string]float64{"orders": 42, "orders-dlq": 5400}}
	var out statsOut
	h.ok(&out, "stats")
	want := map[string]int{"completed": 7, "in-progress": 1, "unconfirmed": 2, "failed": 1, "unknown": 1, "held": 1, "expired": 1, "total": 14}
	for k, v := range want {
		if out.Records[k] != v {
			t.Errorf("records %s: %d, want %d", k, out.Records[k], v)
		}
	}
	if q := out.Queue; q.OldestSource != "cloudwatch" || *q.OldestAgeSeconds != 42 || q.URL != h.queueURL {
		t.Errorf("queue: %+v", q)
	}
	if d := out.DLQ; d.Visible != 1 || d.OldestSource != "cloudwatch" || *d.OldestAgeSeconds != 5400 {
		t.Errorf("dlq: %+v", d)
	}
	if h.sqs.message(h.dlqURL, "m-01").receives != 0 {
		t.Error("stats received from the DLQ although CloudWatch answered")
	}
}

// TestStatsWithoutCloudWatch: the DLQ's age is read from the messages'
// SentTimestamp; the queue's stays unknown: idemctl never receives there.
func TestStatsWithoutCloudWatch(t *testing.T) {
	h := newHarness(t)
	h.put("a", h.completed("a"))
	h.sqs.add(h.dlqURL, "x", h.now.Add(-90*time.Minute), nil)
	h.sqs.add(h.dlqURL, "y", h.now.Add(-time.Minute), nil)
	h.sqs.add(h.queueURL, "z", h.now.Add(-time.Minute), nil)
	var out statsOut
	h.ok(&out, "stats")
	if d := out.DLQ; d.OldestSource != "peek" || *d.OldestAgeSeconds != 5400 || !strings.Contains(d.OldestNote, "2 message(s) read") {
		t.Errorf("dlq: %+v", d)
	}
	if q := out.Queue; q.OldestSource != "none" || q.OldestAgeSeconds != nil || !strings.Contains(q.OldestNote, "never receives from the queue") || q.Visible != 1 {
		t.Errorf("queue: %+v", q)
	}
	if h.sqs.message(h.queueURL, "m-03").receives != 0 {
		t.Fatal("stats received from the source queue")
	}
	if _, hidden := h.sqs.bodies(h.dlqURL); hidden != 0 {
		t.Fatal("DLQ messages left hidden")
	}
	if code := h.run("stats", "--stack", testStack); code != 0 || !strings.Contains(h.out.String(), "records  1: completed 1, in-progress 0") ||
		!strings.Contains(h.out.String(), "oldest 1h30m (peek: the oldest SentTimestamp of 2 message(s) read)") {
		t.Fatalf("table:\n%s", h.out.String())
	}

	h = newHarness(t)
	delete(h.cfn.stacks[testStack], "QueueUrl")
	var empty statsOut
	h.ok(&empty, "stats")
	if empty.Queue != nil || empty.DLQ.OldestSource != "peek" || empty.DLQ.OldestNote != "no visible message to read" {
		t.Errorf("no queue, empty DLQ: %+v %+v", empty.Queue, empty.DLQ)
	}
}
