package sqsbatch_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// TestUnknownOutcomes: a record whose effect timed out (its outcome
// unknown) is reconciled by the copy that takes it over: applied, it is
// Reconciled and done, the effect not run again; with Hold and a
// reconcile that cannot tell, the key is held and every copy fails with
// idem.ErrHeld, into the dead-letter queue with that reason.
func TestUnknownOutcomes(t *testing.T) {
	timeout := errors.New("sms: read tcp: i/o timeout")
	for _, tc := range []struct {
		name    string
		applied bool
		err     error
		want    idem.Outcome
		failed  bool
	}{
		{"applied", true, nil, idem.Reconciled, false},
		{"not applied", false, nil, idem.Executed, false},
		{"cannot tell", false, errors.New("lookup: 503"), idem.Held, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := idem.New(idemtest.NewMemoryStore(), "test", idem.WithUnknownOutcome(idem.Hold))
			if err != nil {
				t.Fatal(err)
			}
			runs := 0
			var rec recorder
			h, err := sqsbatch.New(g, sqsbatch.Attribute("id"),
				func(context.Context, string, events.SQSMessage) ([]byte, error) {
					runs++
					if runs == 1 {
						return nil, timeout
					}
					return []byte("sent"), nil
				},
				sqsbatch.WithLogger(quiet), sqsbatch.WithRecordHook(rec.hook),
				sqsbatch.WithReconcile(func(_ context.Context, key string, m events.SQSMessage) (bool, []byte, error) {
					if key != "k" || m.MessageId != "m2" {
						t.Errorf("reconcile of %q, message %q", key, m.MessageId)
					}
					return tc.applied, []byte("sms-1"), tc.err
				}))
			if err != nil {
				t.Fatal(err)
			}
			resp, _ := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg("m1", "k", "b")}})
			if !slices.Equal(failures(resp), []string{"m1"}) {
				t.Fatalf("timed-out effect: failures %v", failures(resp))
			}
			resp, _ = h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg("m2", "k", "b")}})
			r := rec.records["m2"]
			if r.Outcome != tc.want || r.Failed != tc.failed || (len(failures(resp)) == 1) != tc.failed {
				t.Fatalf("copy after the timeout: %+v, failures %v; want %s, failed %v", r, failures(resp), tc.want, tc.failed)
			}
			if tc.want == idem.Held && !errors.Is(r.Err, idem.ErrHeld) {
				t.Fatalf("held copy's error: %v; want ErrHeld", r.Err)
			}
			if wantRuns := map[idem.Outcome]int{idem.Reconciled: 1, idem.Executed: 2, idem.Held: 1}[tc.want]; runs != wantRuns {
				t.Fatalf("effect ran %d times; want %d", runs, wantRuns)
			}
		})
	}
}

// TestHeldCopiesInOneBatch: when the first copy of a key in a batch holds
// it, every later copy of that key in the batch is reported Held with
// idem.ErrHeld too — not Skipped — so that each reaches the dead-letter
// queue with that reason and counts as Held; on a FIFO queue the rest of
// the group that is another key stays Skipped (found from outside: the
// second copy was Skipped, ErrGroupFailed).
func TestHeldCopiesInOneBatch(t *testing.T) {
	timeout := errors.New("capture: read tcp: i/o timeout")
	for _, tc := range []struct {
		name    string
		records []events.SQSMessage
		held    []string // message ids reported Held
		skipped []string // reported Skipped (outcome 0, ErrGroupFailed)
	}{
		{"standard", []events.SQSMessage{msg("m2", "k", "b"), msg("m3", "k", "b")}, []string{"m2", "m3"}, nil},
		{"fifo", []events.SQSMessage{fifo("m2", "g", "k"), fifo("m3", "g", "other"), fifo("m4", "g", "k")}, []string{"m2", "m4"}, []string{"m3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := idem.New(idemtest.NewMemoryStore(), "test", idem.WithUnknownOutcome(idem.Hold))
			if err != nil {
				t.Fatal(err)
			}
			runs := 0
			var rec recorder
			h, err := sqsbatch.New(g, sqsbatch.Attribute("id"),
				func(context.Context, string, events.SQSMessage) ([]byte, error) {
					runs++
					return nil, timeout
				}, sqsbatch.WithLogger(quiet), sqsbatch.WithRecordHook(rec.hook))
			if err != nil {
				t.Fatal(err)
			}
			first := tc.records[0]
			first.MessageId = "m1"
			_, _ = h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{first}})
			resp, _ := h.Handle(context.Background(), events.SQSEvent{Records: tc.records})
			if got := len(failures(resp)); got != len(tc.records) {
				t.Fatalf("failures %v; want every record of the batch", failures(resp))
			}
			for _, id := range tc.held {
				if r := rec.records[id]; r.Outcome != idem.Held || !errors.Is(r.Err, idem.ErrHeld) || r.Key != "k" || !r.Failed {
					t.Errorf("%s: %+v; want Held, ErrHeld, key k, failed", id, r)
				}
			}
			for _, id := range tc.skipped {
				if r := rec.records[id]; r.Outcome != 0 || !errors.Is(r.Err, sqsbatch.ErrGroupFailed) {
					t.Errorf("%s: %+v; want Skipped (ErrGroupFailed)", id, r)
				}
			}
			if runs != 1 {
				t.Errorf("effect ran %d times; want once (the first delivery)", runs)
			}
		})
	}
}
