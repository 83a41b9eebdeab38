package consumer

import (
	"bytes"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// TestMaxReceiveCountReachesTheBatchHandler: IDEM_MAX_RECEIVE_COUNT is what
// tells the batch handler which receive is a message's last
// (sqsbatch.WithMaxReceiveCount). With it, a record done on its last
// receive is deleted at once through the runtime's queue, as Start wires
// it (sqsbatch.WithDelete), and one on an earlier receive is left to the
// batch response; without it no receive is known to be the last.
func TestMaxReceiveCountReachesTheBatchHandler(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      map[string]string
		receives int
		deleted  bool
	}{
		{"last receive", map[string]string{EnvMaxReceiveCount: "3"}, 3, true},
		{"earlier receive", map[string]string{EnvMaxReceiveCount: "3"}, 2, false},
		{"count unknown", nil, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Load(getenv(mergeEnv(map[string]string{EnvTable: "receipts", EnvKey: "orderId"}, tc.env)))
			if err != nil {
				t.Fatal(err)
			}
			q := &fakeQueue{}
			effect := &tally{applied: map[string]int{}}
			h, err := New(cfg, idemtest.NewMemoryStore(), Effect{Lease: effect.lease},
				WithMetrics(&bytes.Buffer{}), WithLogger(slog.New(slog.NewJSONHandler(io.Discard, nil))),
				WithBatchOptions(sqsbatch.WithDelete(&queue{client: q})))
			if err != nil {
				t.Fatal(err)
			}
			msg := order("m-1", "o-1")
			msg.EventSourceARN, msg.ReceiptHandle = "arn:aws:sqs:eu-west-1:123456789012:orders", "rh-1"
			msg.Attributes = map[string]string{"ApproximateReceiveCount": strconv.Itoa(tc.receives)}
			resp, err := h.Handle(t.Context(), events.SQSEvent{Records: []events.SQSMessage{msg}})
			if err != nil || len(resp.BatchItemFailures) != 0 || effect.count("o-1") != 1 {
				t.Fatalf("Handle: %+v, %v, applied %d; want the record done once", resp, err, effect.count("o-1"))
			}
			var want []string
			if tc.deleted {
				want = []string{"http://sqs.local/orders rh-1"}
			}
			q.mu.Lock()
			defer q.mu.Unlock()
			if !slices.Equal(q.deleted, want) {
				t.Fatalf("%s=%q, receive %d: deleted at once %v, want %v (IDEM_MAX_RECEIVE_COUNT must reach sqsbatch.WithMaxReceiveCount)",
					EnvMaxReceiveCount, tc.env[EnvMaxReceiveCount], tc.receives, q.deleted, want)
			}
		})
	}
}
