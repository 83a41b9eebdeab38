package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

type listOut struct {
	Status  string
	Matched int
	Records []struct{ StorageKey, State string }
}

// listTable fills the namespace with records in every state, another
// namespace's records, and enough of them for several pages per segment.
func listTable(t *testing.T) *harness {
	h := newHarness(t)
	for i := range 7 {
		h.put(fmt.Sprintf("done-%d", i), h.completed("x"))
	}
	h.put("busy", h.inProgress("busy", time.Minute))
	h.put("stuck-1", h.inProgress("stuck-1", -time.Minute))
	old := h.inProgress("stuck-2", -2*time.Hour)
	old.UpdatedAt = h.now.Add(-3 * time.Hour)
	h.put("stuck-2", old)
	h.put("broken", h.failed("broken", 1))
	h.put("unsure", h.unknown("unsure", 1))
	h.put("parked", h.held("parked", 2))
	h.put("gone", h.expired("gone", idem.StatusCompleted))
	other := h.completed("x")
	other.Key = "refunds#" + strings.Repeat("0", 64)
	h.ddb.put(encode(other))
	return h
}

func TestList(t *testing.T) {
	h := listTable(t)
	for status, want := range map[string]int{"completed": 7, "in-progress": 1, "unconfirmed": 2, "failed": 1, "unknown": 1, "held": 1, "expired": 1, "all": 14} {
		var out listOut
		h.ok(&out, "list", "--status", status, "--segments", "3")
		if out.Matched != want || len(out.Records) != want {
			t.Errorf("--status %s: %d matched, %d listed; want %d", status, out.Matched, len(out.Records), want)
		}
		for _, r := range out.Records {
			if !strings.HasPrefix(r.StorageKey, "orders#") || (status != "all" && r.State != status) {
				t.Errorf("--status %s listed %+v", status, r)
			}
		}
	}
	var out listOut
	h.ok(&out, "list", "--status", "unconfirmed", "--older-than", "1h")
	if out.Matched != 1 || out.Records[0].StorageKey != h.guard.StorageKey("stuck-2") {
		t.Errorf("--older-than 1h: %+v", out)
	}
	h.ok(&out, "list", "--limit", "2")
	if out.Matched != 14 || len(out.Records) != 2 || out.Records[0].StorageKey != h.guard.StorageKey("stuck-2") {
		t.Errorf("--limit 2: %+v; want the oldest two of 14", out)
	}
	if code := h.run("list", "--limit", "2", "--stack", testStack); code != 0 || !strings.Contains(h.out.String(), "14 all record(s) in namespace orders of receipts (the oldest 2 shown: --limit)") {
		t.Errorf("table: %s", h.out.String())
	}
}

// TestListRemoteStates: an UNKNOWN record (an outcome the next delivery
// reconciles) and a HELD one (waiting for an operator) are states of
// their own, filtered server-side by their status; a held record's
// expiry reads "never".
func TestListRemoteStates(t *testing.T) {
	h := listTable(t)
	for _, tc := range []struct{ status, key, stored string }{
		{"held", "parked", "HELD"},
		{"unknown", "unsure", "UNKNOWN"},
	} {
		var out struct {
			Matched int
			Records []struct{ StorageKey, State, Status, LastError string }
		}
		h.ok(&out, "list", "--status", tc.status)
		if out.Matched != 1 || out.Records[0].StorageKey != h.guard.StorageKey(tc.key) || out.Records[0].State != tc.status || out.Records[0].Status != tc.stored {
			t.Errorf("--status %s: %+v; want %s alone", tc.status, out, tc.key)
		}
	}
	if code := h.run("list", "--status", "held", "--stack", testStack); code != 0 ||
		!strings.Contains(h.out.String(), "never (held)  unknown outcome, reconcile could not tell: provider-timeout") {
		t.Errorf("table:\n%s", h.out.String())
	}
	h.fails(exitUsage, "one of all, completed, in-progress, unconfirmed, failed, unknown, held, expired", "list", "--status", "parked")
}

// TestListScansInParallel: every segment is read, a page at a time, with
// the namespace and status filtered server-side.
func TestListScansInParallel(t *testing.T) {
	h := listTable(t)
	var out listOut
	h.ok(&out, "list", "--status", "completed", "--segments", "4")
	if out.Matched != 7 || h.ddb.count("Scan") < 5 {
		t.Fatalf("%d records in %d scan requests; want 7 in more than one per segment", out.Matched, h.ddb.count("Scan"))
	}
}

// TestListScanError: a failing segment fails the listing, one line.
func TestListScanError(t *testing.T) {
	h := listTable(t)
	h.ddb.items["orders#zzz"] = map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "orders#zzz"}, "status": &types.AttributeValueMemberS{Value: "FAILED"},
		"attempts": &types.AttributeValueMemberS{Value: "many"},
	}
	h.fails(exitRuntime, `decode attribute "attempts"`, "list")
}

// TestProgress: drawn on a terminal only, and erased before the result.
func TestProgress(t *testing.T) {
	h := listTable(t)
	h.ok(nil, "list")
	if h.errOut.Len() != 0 {
		t.Fatalf("stderr is not a terminal, yet: %q", h.errOut.String())
	}
	h.errTTY = true
	h.ok(nil, "list")
	if s := h.errOut.String(); !strings.Contains(s, "list receipts: ") || !strings.Contains(s, "items read") || !strings.HasSuffix(s, "\r\033[K") {
		t.Fatalf("progress: %q", s)
	}

	var buf bytes.Buffer
	now := time.Now()
	p := newProgress(&buf, true, "scan", 100, func() time.Time { return now })
	p.start(2)
	p.add(50, 3)
	p.add(500, 3) // throttled: the same instant
	now = now.Add(time.Second)
	p.segmentDone()
	if s := buf.String(); strings.Count(s, "\r") != 2 || !strings.Contains(s, "[#######################.] scan: 550 of ~100 items read, 6 matched, 1/2 segments done") {
		t.Fatalf("progress: %q", s)
	}
	var nilBar *progress
	nilBar.start(1)
	nilBar.add(1, 1)
	nilBar.finish()
}
