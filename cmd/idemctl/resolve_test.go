package main

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// notDoneReason is the last error the stores' Resolve writes on a record
// released by resolve --not-done.
const notDoneReason = "idemctl resolve --not-done: an operator found the effect did not happen"

func attrS(item map[string]types.AttributeValue, n string) string {
	if v, ok := item[n].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func attrN(item map[string]types.AttributeValue, n string) string {
	if v, ok := item[n].(*types.AttributeValueMemberN); ok {
		return v.Value
	}
	return ""
}

// TestResolveDone writes the receipt of an unconfirmed record under a new
// token of its own (a zombie's late release cannot undo it), keeping its
// attempts and retention.
func TestResolveDone(t *testing.T) {
	h := newHarness(t)
	stuck := h.inProgress("stuck", -time.Minute)
	h.put("stuck", stuck)
	var out struct {
		Decision, Note string
		Written        bool
		Before, After  struct {
			State    string
			Resolved bool
		}
	}
	h.ok(&out, "resolve", "stuck", "--done", "--yes")
	item := h.record("stuck")
	if !out.Written || out.Before.State != "unconfirmed" || out.After.State != "completed" || out.Decision != "done" || !out.After.Resolved {
		t.Fatalf("resolve --done: %+v", out)
	}
	// An operator's receipt, which a copy's Duplicate reports as such: no
	// result, and the resolved attribute.
	if r, ok := item["resolved"].(*types.AttributeValueMemberBOOL); !ok || !r.Value {
		t.Fatalf("no resolved attribute: %v", item)
	}
	if r, ok := item["resultOmitted"].(*types.AttributeValueMemberBOOL); !ok || !r.Value || item["result"] != nil {
		t.Fatalf("the receipt keeps a result: %v", item)
	}
	if attrS(item, "status") != "COMPLETED" || !strings.HasPrefix(attrS(item, "lease"), "idemctl-") ||
		attrN(item, "attempts") != "1" || attrN(item, "expiresAt") != encode(stuck)["expiresAt"].(*types.AttributeValueMemberN).Value ||
		attrN(item, "updatedAt") != encode(idem.Record{UpdatedAt: h.now})["updatedAt"].(*types.AttributeValueMemberN).Value {
		t.Fatalf("receipt written: %v", item)
	}
}

// TestResolveNotDone releases the record, keeping the token: a late
// receipt of the attempt that held it may still land, and it is the truth.
func TestResolveNotDone(t *testing.T) {
	h := newHarness(t)
	h.put("stuck", h.inProgress("stuck", -time.Minute))
	h.ok(nil, "resolve", "stuck", "--not-done", "--yes")
	item := h.record("stuck")
	if attrS(item, "status") != "FAILED" || attrS(item, "lease") != "lease-stuck" || attrS(item, "lastError") != notDoneReason {
		t.Fatalf("released: %v", item)
	}
}

// TestResolveOtherStates: what is written, or refused, for each state.
func TestResolveOtherStates(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rec    func(h *harness) (idem.Record, bool)
		flag   string
		code   int
		say    string
		status string // after; "" for untouched
	}{
		{"failed, done", func(h *harness) (idem.Record, bool) { return h.failed("k", 2), true }, "--done", 0, "written: COMPLETED", "COMPLETED"},
		{"failed, not done", func(h *harness) (idem.Record, bool) { return h.failed("k", 2), true }, "--not-done", 0, "already released", ""},
		{"completed, done", func(h *harness) (idem.Record, bool) { return h.completed("k"), true }, "--done", 0, "already completed", ""},
		{"completed, not done", func(h *harness) (idem.Record, bool) { return h.completed("k"), true }, "--not-done", 1, "never releases a receipt", ""},
		{"lease live", func(h *harness) (idem.Record, bool) { return h.inProgress("k", 2*time.Minute), true }, "--done", 1, "until 2026-11-24T02:02:00Z (2m left)", ""},
		{"expired", func(h *harness) (idem.Record, bool) { return h.expired("k", idem.StatusInProgress), true }, "--not-done", 1, "counts as absent", ""},
		{"absent", func(h *harness) (idem.Record, bool) { return idem.Record{}, false }, "--done", 1, "no record for k in namespace orders", ""},
		{"unknown status", func(h *harness) (idem.Record, bool) {
			first := h.completed("k") // the item the table check samples
			first.Key = "orders#" + strings.Repeat("0", 64)
			h.ddb.put(encode(first))
			r := h.completed("k")
			r.Status = "DONE"
			return r, true
		}, "--done", 1, `status "DONE"`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			rec, found := tc.rec(h)
			if found {
				h.put("k", rec)
			}
			before := h.record("k")
			code := h.run("resolve", "k", tc.flag, "--yes", "--stack", testStack)
			if code != tc.code || !strings.Contains(h.out.String()+h.errOut.String(), tc.say) {
				t.Fatalf("exit %d, %s%s; want exit %d saying %q", code, h.out.String(), h.errOut.String(), tc.code, tc.say)
			}
			after := h.record("k")
			if tc.status == "" && !reflect.DeepEqual(before, after) {
				t.Fatalf("written: %v", after)
			}
			if tc.status != "" && attrS(after, "status") != tc.status {
				t.Fatalf("status %s, want %s", attrS(after, "status"), tc.status)
			}
		})
	}
}

// TestResolveRefusedWhenChanged: the attempt that held the record writes
// its late receipt between resolve's read and its write, keeping the
// token. A release fenced by the token alone would turn that receipt
// into FAILED; resolve's write is refused and nothing is written.
func TestResolveRefusedWhenChanged(t *testing.T) {
	for _, change := range []struct {
		name string
		to   func(idem.Record) idem.Record
	}{
		{"late receipt, same token", func(r idem.Record) idem.Record { r.Status = idem.StatusCompleted; return r }},
		{"late release, same token", func(r idem.Record) idem.Record { r.Status = idem.StatusFailed; return r }},
		{"taken over by a copy", func(r idem.Record) idem.Record { r.Lease, r.Attempts = "lease-copy", 2; return r }},
		{"touched", func(r idem.Record) idem.Record { r.UpdatedAt = r.UpdatedAt.Add(time.Millisecond); return r }},
	} {
		t.Run(change.name, func(t *testing.T) {
			h := newHarness(t)
			stuck := h.inProgress("stuck", -time.Minute)
			h.put("stuck", stuck)
			changed := change.to(stuck)
			h.ddb.beforeUpdate = func() { h.put("stuck", changed) }
			h.fails(exitRuntime, "the record changed since it was read", "resolve", "stuck", "--not-done", "--yes")
			changed.Key = h.guard.StorageKey("stuck")
			if got := h.record("stuck"); !reflect.DeepEqual(got, encode(changed)) {
				t.Fatalf("after a refused resolve: %v; want the changed record untouched", got)
			}
		})
	}
}

// TestResolveOwnWriteRetried: the SDK retried a write whose answer was
// lost; the retry's condition fails on our own write, which is success.
func TestResolveOwnWriteRetried(t *testing.T) {
	for _, flag := range []string{"--done", "--not-done"} {
		h := newHarness(t)
		h.put("stuck", h.inProgress("stuck", -time.Minute))
		h.ddb.lostAnswer = true
		h.ok(nil, "resolve", "stuck", flag, "--yes")
	}
}

// TestResolveConfirm asks on a terminal; the answer decides; a record
// that changes while the operator reads is refused after "y".
func TestResolveConfirm(t *testing.T) {
	h := newHarness(t)
	h.put("stuck", h.inProgress("stuck", -time.Minute))
	h.fails(exitUsage, "pass --yes", "resolve", "stuck", "--done")

	h.inTTY = true
	h.stdin = "no\n"
	h.fails(exitRuntime, "aborted: nothing written", "resolve", "stuck", "--done")
	if attrS(h.record("stuck"), "status") != "IN_PROGRESS" {
		t.Fatal("written without a yes")
	}

	h.stdinReader = &changingReader{answer: "y\n", change: func() { h.put("stuck", h.completed("stuck")) }}
	h.fails(exitRuntime, "it is now completed", "resolve", "stuck", "--not-done")
	if attrS(h.record("stuck"), "status") != "COMPLETED" {
		t.Fatal("the late receipt was overwritten")
	}

	h.put("stuck", h.inProgress("stuck", -time.Minute))
	h.stdinReader, h.stdin = nil, "yes\n"
	if code := h.run("resolve", "stuck", "--done", "--stack", testStack); code != 0 {
		t.Fatal(h.errOut.String())
	}
	if !strings.Contains(h.errOut.String(), "Write COMPLETED for stuck (now unconfirmed)? [y/N]") ||
		!strings.Contains(h.out.String(), "will write COMPLETED (the receipt: every later copy of the key is skipped until 2026-12-01T02:00:00Z), only if the record is still IN_PROGRESS with lease lease-st…") {
		t.Fatalf("prompt %q, plan %q", h.errOut.String(), h.out.String())
	}
}

// changingReader changes the record while the operator reads, then
// answers.
type changingReader struct {
	answer string
	change func()
	done   bool
}

func (r *changingReader) Read(p []byte) (int, error) {
	if !r.done {
		r.change()
		r.done = true
	}
	n := copy(p, r.answer)
	r.answer = r.answer[n:]
	return n, nil
}
