package sqsbatch_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"maps"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// hidden records the visibility changes asked for, by message id, and
// fails them with err. A change asked with a context that has ended is
// not made: SQS would never see it.
type hidden struct {
	err error

	mu  sync.Mutex
	got map[string]time.Duration
}

func (v *hidden) ChangeVisibility(ctx context.Context, msg events.SQSMessage, timeout time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.got == nil {
		v.got = map[string]time.Duration{}
	}
	v.got[msg.MessageId] = timeout
	return v.err
}

func (v *hidden) changes() map[string]time.Duration {
	v.mu.Lock()
	defer v.mu.Unlock()
	return maps.Clone(v.got)
}

// backedOff reports whether every change in got is its message's backoff in
// want, or up to a quarter less (the jitter), in whole seconds.
func backedOff(got, want map[string]time.Duration) bool {
	if len(got) != len(want) {
		return false
	}
	for id, w := range want {
		if g, ok := got[id]; !ok || g < w-w/4 || g > w || g%time.Second != 0 {
			return false
		}
	}
	return true
}

func TestStoreBackoffSchedule(t *testing.T) {
	const vt = 3 * time.Minute
	for _, tt := range []struct {
		receive int
		want    time.Duration
	}{
		{0, 6 * time.Minute}, // unknown: as the first
		{1, 6 * time.Minute},
		{2, 12 * time.Minute},
		{3, 24 * time.Minute},
		{4, 48 * time.Minute},
		{8, 768 * time.Minute}, // 12 h 48 min: over SQS's maximum
		{1000, sqsbatch.MaxStoreBackoff},
	} {
		want := min(tt.want, sqsbatch.MaxStoreBackoff)
		if got := sqsbatch.StoreBackoff(vt, tt.receive); got != want {
			t.Errorf("StoreBackoff(%s, %d) = %s, want %s", vt, tt.receive, got, want)
		}
	}
	if got := sqsbatch.StoreBackoff(sqsbatch.MaxStoreBackoff, 1); got != sqsbatch.MaxStoreBackoff {
		t.Errorf("StoreBackoff of the longest base = %s, want it capped at %s", got, sqsbatch.MaxStoreBackoff)
	}
}

// TestStoreFailureBacksOff: records that failed on the store, and the
// copies of their key not run after them, stay hidden longer with each
// receive; other failures, successes and last receives keep the queue's
// visibility timeout.
func TestStoreFailureBacksOff(t *testing.T) {
	const vt = 30 * time.Second
	store := &downStore{MemoryStore: idemtest.NewMemoryStore(), down: map[string]bool{}}
	g := newGuard(t, store)
	for _, k := range []string{"down-1", "down-2", "down-3", "down-last"} {
		store.down[g.StorageKey(k)] = true
	}
	var vis hidden
	h, err := sqsbatch.New(g, sqsbatch.Attribute("id"),
		func(_ context.Context, key string, _ events.SQSMessage) ([]byte, error) {
			if key == "bad" {
				return nil, errors.New("boom")
			}
			return nil, nil
		},
		sqsbatch.WithLogger(quiet), sqsbatch.WithVisibility(&vis), sqsbatch.WithMaxReceiveCount(5), sqsbatch.WithStoreBackoff(vt))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		received(msg("store-r1", "down-1", "b"), 1),
		received(msg("store-r2", "down-2", "b"), 2),
		received(msg("store-r4", "down-3", "b"), 4),
		received(msg("skipped-r2", "down-1", "b"), 2), // a copy of down-1: not run after it failed
		received(msg("store-last", "down-last", "b"), 5),
		received(msg("effect-failed", "bad", "b"), 2),
		received(msg("done", "fine", "b"), 2),
	}})
	if err != nil || len(resp.BatchItemFailures) != 6 {
		t.Fatalf("Handle: %v, %v; want every record but one failed, no error", failures(resp), err)
	}
	want := map[string]time.Duration{
		"store-r1":   2 * vt,
		"store-r2":   4 * vt,
		"store-r4":   16 * vt,
		"skipped-r2": 4 * vt,
	}
	if got := vis.changes(); !backedOff(got, want) {
		t.Errorf("visibility changes %v\nwant %v, or up to a quarter less", got, want)
	}
}

// TestStoreBackoffAskedAtOnce: the change is asked as soon as the record
// failed, not when the batch is done: an invocation that dies in a later
// record (a crash, a timeout) keeps it.
func TestStoreBackoffAskedAtOnce(t *testing.T) {
	store := &downStore{MemoryStore: idemtest.NewMemoryStore(), down: map[string]bool{}}
	g := newGuard(t, store)
	store.down[g.StorageKey("down")] = true
	var vis hidden
	var before map[string]time.Duration
	h, err := sqsbatch.New(g, sqsbatch.Attribute("id"),
		func(context.Context, string, events.SQSMessage) ([]byte, error) {
			before = vis.changes() // the invocation could die here
			return nil, nil
		},
		sqsbatch.WithLogger(quiet), sqsbatch.WithVisibility(&vis), sqsbatch.WithStoreBackoff(time.Minute), sqsbatch.WithConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		received(msg("m1", "down", "b"), 1), received(msg("m2", "fine", "b"), 1),
	}}); err != nil {
		t.Fatal(err)
	}
	if !backedOff(before, map[string]time.Duration{"m1": 2 * time.Minute}) {
		t.Errorf("changes asked before the next record ran: %v, want m1 hidden 90s to 2m", before)
	}
}

// TestStoreDownBacksOffEveryRecord: a batch that failed on the store as a
// whole (ErrStoreDown) backs off every record.
func TestStoreDownBacksOffEveryRecord(t *testing.T) {
	const vt = 12 * time.Second
	var vis hidden
	h, err := sqsbatch.New(newGuard(t, &downStore{MemoryStore: idemtest.NewMemoryStore()}), sqsbatch.Attribute("id"), nop,
		sqsbatch.WithLogger(quiet), sqsbatch.WithVisibility(&vis), sqsbatch.WithStoreBackoff(vt))
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		received(msg("a", "ka", "b"), 1), received(msg("b", "kb", "b"), 2), received(msg("c", "ka", "b"), 3),
	}})
	if !errors.Is(err, sqsbatch.ErrStoreDown) {
		t.Fatalf("Handle: %v, want ErrStoreDown", err)
	}
	want := map[string]time.Duration{"a": 2 * vt, "b": 4 * vt, "c": 8 * vt}
	if got := vis.changes(); !backedOff(got, want) {
		t.Errorf("visibility changes %v\nwant %v, or up to a quarter less", got, want)
	}
}

// slowCommits is a transactional store whose commits hang until their
// context ends: DynamoDB's transactions on a loaded machine, or a table
// that throttles.
type slowCommits struct{ *idemtest.MemoryStore }

func (s slowCommits) Commit(ctx context.Context, _ idem.Transaction) (idem.Record, bool, error) {
	<-ctx.Done()
	return idem.Record{}, false, ctx.Err()
}

// TestStoreBackoffSpreads: records that failed together do not all come
// back together.
func TestStoreBackoffSpreads(t *testing.T) {
	var vis hidden
	h, err := sqsbatch.New(newGuard(t, &downStore{MemoryStore: idemtest.NewMemoryStore()}), sqsbatch.Attribute("id"), nop,
		sqsbatch.WithLogger(quiet), sqsbatch.WithVisibility(&vis), sqsbatch.WithStoreBackoff(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	var batch []events.SQSMessage
	for i := range 10 {
		id := strconv.Itoa(i)
		batch = append(batch, received(msg("m"+id, "k"+id, "b"), 1))
	}
	if _, err := h.Handle(context.Background(), events.SQSEvent{Records: batch}); !errors.Is(err, sqsbatch.ErrStoreDown) {
		t.Fatalf("Handle: %v, want ErrStoreDown", err)
	}
	distinct := map[time.Duration]bool{}
	for _, d := range vis.changes() {
		distinct[d] = true
	}
	if len(distinct) < 2 {
		t.Errorf("visibility changes %v: ten records hidden alike", vis.changes())
	}
}

// TestTimedOutCommitBacksOff: a transactional commit that timed out on the
// store has used up the records' context; the visibility change is still
// made, before the invocation's deadline.
func TestTimedOutCommitBacksOff(t *testing.T) {
	const vt = 12 * time.Second
	var vis hidden
	var outcome idem.Outcome
	h, err := sqsbatch.NewTx(newGuard(t, slowCommits{idemtest.NewMemoryStore()}), sqsbatch.Attribute("id"),
		func(context.Context, string, events.SQSMessage) (idem.TxEffect, error) {
			return idem.TxEffect{Writes: []any{"w"}}, nil
		},
		sqsbatch.WithLogger(quiet), sqsbatch.WithVisibility(&vis), sqsbatch.WithStoreBackoff(vt),
		sqsbatch.WithRecordHook(func(_ context.Context, r sqsbatch.RecordResult) { outcome = r.Outcome }))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	deadline, _ := ctx.Deadline()
	if _, err := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{received(msg("m1", "k", "b"), 2)}}); !errors.Is(err, sqsbatch.ErrStoreDown) {
		t.Fatalf("Handle: %v, want ErrStoreDown", err)
	}
	if outcome != idem.StoreError {
		t.Fatalf("a commit that timed out: %v, want StoreError", outcome)
	}
	if late := time.Since(deadline); late > 0 {
		t.Errorf("Handle returned %s after the deadline", late)
	}
	if got := vis.changes(); !backedOff(got, map[string]time.Duration{"m1": 4 * vt}) {
		t.Errorf("visibility changes %v, want m1 hidden %s to %s", got, 3*vt, 4*vt)
	}
}

// TestStoreBackoffChangeFails: a visibility change that fails is logged;
// the record stays failed, reported to Lambda.
func TestStoreBackoffChangeFails(t *testing.T) {
	var buf bytes.Buffer
	vis := hidden{err: errors.New("AccessDenied")}
	h, err := sqsbatch.New(newGuard(t, &downStore{MemoryStore: idemtest.NewMemoryStore()}), sqsbatch.Attribute("id"), nop,
		sqsbatch.WithLogger(slog.New(slog.NewJSONHandler(&buf, nil))), sqsbatch.WithVisibility(&vis), sqsbatch.WithStoreBackoff(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{received(msg("m1", "k", "b"), 1)}})
	if !errors.Is(err, sqsbatch.ErrStoreDown) || !equal(failures(resp), []string{"m1"}) {
		t.Fatalf("Handle: %v, %v; want m1 failed, ErrStoreDown", failures(resp), err)
	}
	if !strings.Contains(buf.String(), `"msg":"visibility not changed","message_id":"m1","error":"AccessDenied"`) {
		t.Errorf("the failed change is not logged:\n%s", buf.String())
	}
}

func TestWithStoreBackoffRefusesBadBases(t *testing.T) {
	for _, base := range []time.Duration{0, -time.Second, 500 * time.Millisecond, 13 * time.Hour} {
		_, err := sqsbatch.New(newGuard(t, idemtest.NewMemoryStore()), sqsbatch.MessageID, nop, sqsbatch.WithStoreBackoff(base))
		if !errors.Is(err, idem.ErrInvalid) {
			t.Errorf("WithStoreBackoff(%s): %v, want ErrInvalid", base, err)
		}
	}
}
