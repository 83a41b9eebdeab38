package sqsbatch_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// downStore fails Acquire for the keys in down (every key when down is nil),
// and Complete always when noReceipts is set.
type downStore struct {
	*idemtest.MemoryStore
	down       map[string]bool
	noReceipts bool
}

var errUnreachable = errors.New("dial tcp: connection refused")

func (s *downStore) Acquire(ctx context.Context, a idem.Acquisition) (idem.Record, bool, error) {
	if s.down == nil || s.down[a.Key] {
		return idem.Record{}, false, errUnreachable
	}
	return s.MemoryStore.Acquire(ctx, a)
}

func (s *downStore) Complete(ctx context.Context, key, lease string, c idem.Completion) error {
	if s.noReceipts {
		return errUnreachable
	}
	return s.MemoryStore.Complete(ctx, key, lease, c)
}

func nop(context.Context, string, events.SQSMessage) ([]byte, error) { return nil, nil }

// When every record fails because the store is down, Handle returns an
// error so that the event source mapping backs off; partial failures stay
// partial.
func TestStoreDownFailsTheBatch(t *testing.T) {
	store := &downStore{MemoryStore: idemtest.NewMemoryStore()}
	g := newGuard(t, store)
	h, err := sqsbatch.New(g, sqsbatch.Attribute("id"), nop, sqsbatch.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	ev := events.SQSEvent{Records: []events.SQSMessage{msg("a", "ka", "{}"), msg("b", "kb", "{}"), msg("c", "ka", "{}")}}
	resp, err := h.Handle(context.Background(), ev)
	if !errors.Is(err, sqsbatch.ErrStoreDown) || !errors.Is(err, idem.ErrStore) || len(resp.BatchItemFailures) != 3 {
		t.Fatalf("store down: %v, %v; want ErrStoreDown and every record failed", resp, err)
	}
	store.down = map[string]bool{g.StorageKey("ka"): true}
	resp, err = h.Handle(context.Background(), ev)
	if err != nil || !equal(failures(resp), []string{"a", "c"}) {
		t.Fatalf("store failing for one key: %v, %v; want a partial failure, no error", failures(resp), err)
	}
	// A batch that fails for other reasons is partial too.
	bad := events.SQSEvent{Records: []events.SQSMessage{msg("x", "", "{}")}}
	if _, err := h.Handle(context.Background(), bad); err != nil {
		t.Fatalf("key-less record: %v, want no error", err)
	}
}

// Unconfirmed: the effect ran but its receipt could not be written. The
// message is done (delivering it again would run the effect again), and an
// ERROR line says so.
func TestUnconfirmedIsDoneAndLogged(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	store := &downStore{MemoryStore: idemtest.NewMemoryStore(), down: map[string]bool{}, noReceipts: true}
	g, err := idem.New(store, "test", idem.WithLease(time.Second), idem.WithSafetyMargin(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	var got sqsbatch.RecordResult
	h, err := sqsbatch.New(g, sqsbatch.Attribute("id"), nop, sqsbatch.WithLogger(log),
		sqsbatch.WithRecordHook(func(_ context.Context, r sqsbatch.RecordResult) { got = r }))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg("a", "ka", "{}")}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("unconfirmed: %v, %v; want success", resp, err)
	}
	if got.Outcome != idem.Unconfirmed || got.Failed || !errors.Is(got.Err, idem.ErrUnconfirmed) {
		t.Fatalf("record %+v", got)
	}
	if !strings.Contains(buf.String(), `"level":"ERROR","msg":"record done without receipt"`) {
		t.Fatalf("log:\n%s", buf.String())
	}
}

func equal(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }
