package sqsbatch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// resolvedStore reads every receipt as an operator's (idemctl resolve
// --done), as dynamostore and redisstore decode one.
type resolvedStore struct{ *idemtest.MemoryStore }

func (s resolvedStore) Acquire(ctx context.Context, a idem.Acquisition) (idem.Record, bool, error) {
	rec, ok, err := s.MemoryStore.Acquire(ctx, a)
	if !ok && rec.Status == idem.StatusCompleted {
		rec.Result, rec.ResultOmitted, rec.Resolved = nil, true, true
	}
	return rec, ok, err
}

// TestDuplicateOfResolvedReceipt: a record skipped on a receipt an
// operator wrote says so, to the hook and in its log line.
func TestDuplicateOfResolvedReceipt(t *testing.T) {
	store := resolvedStore{idemtest.NewMemoryStore()}
	g := newGuard(t, store)
	var buf bytes.Buffer
	var rec recorder
	h, err := sqsbatch.New(g, sqsbatch.Attribute("id"), nop,
		sqsbatch.WithLogger(slog.New(slog.NewJSONHandler(&buf, nil))), sqsbatch.WithRecordHook(rec.hook))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"first", "copy"} {
		if _, err := h.Handle(t.Context(), events.SQSEvent{Records: []events.SQSMessage{msg(id, "k", "{}")}}); err != nil {
			t.Fatal(err)
		}
	}
	if r := rec.records["first"]; r.Outcome != idem.Executed || r.Resolved {
		t.Errorf("first: %+v", r)
	}
	if r := rec.records["copy"]; r.Outcome != idem.Duplicate || !r.Resolved {
		t.Errorf("copy: %+v; want a Duplicate, Resolved", r)
	}
	resolved := map[string]any{}
	for line := range bytes.Lines(buf.Bytes()) {
		var entry map[string]any
		if err := json.Unmarshal(line, &entry); err != nil {
			t.Fatal(err)
		}
		resolved[entry["message_id"].(string)] = entry["resolved"]
	}
	if resolved["first"] != nil || resolved["copy"] != true {
		t.Errorf("log lines' resolved: %v; want only the copy's, true\n%s", resolved, buf.String())
	}
}
