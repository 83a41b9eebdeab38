package consumer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// unreachable is a receipt store that cannot be reached.
type unreachable struct{ *idemtest.MemoryStore }

func (unreachable) Acquire(context.Context, idem.Acquisition) (idem.Record, bool, error) {
	return idem.Record{}, false, errors.New("dial tcp: connection refused")
}

// TestVisibilityTimeoutBacksOffStoreFailures: IDEM_VISIBILITY_TIMEOUT
// reaches the batch handler as the base of the store backoff, and the
// runtime's queue (sqsbatch.WithVisibility, as Start wires it) asks SQS to
// hide a record that failed on the store for 2^n visibility timeouts after
// its n-th receive; unset, such a record keeps the queue's visibility
// timeout.
func TestVisibilityTimeoutBacksOffStoreFailures(t *testing.T) {
	for name, tt := range map[string]struct {
		env  map[string]string
		want map[string]int32 // most seconds by receipt handle
	}{
		"set":   {map[string]string{EnvVisibilityTimeout: "12s"}, map[string]int32{"rh-1": 24, "rh-2": 48}},
		"unset": {nil, map[string]int32{}},
	} {
		t.Run(name, func(t *testing.T) {
			cfg, err := Load(getenv(mergeEnv(map[string]string{EnvTable: "receipts", EnvKey: "orderId"}, tt.env)))
			if err != nil {
				t.Fatal(err)
			}
			q := &fakeQueue{}
			fx := &tally{applied: map[string]int{}}
			h, err := New(cfg, unreachable{idemtest.NewMemoryStore()}, Effect{Lease: fx.lease},
				WithMetrics(io.Discard), WithLogger(slog.New(slog.DiscardHandler)), WithBatchOptions(sqsbatch.WithVisibility(&queue{client: q})))
			if err != nil {
				t.Fatal(err)
			}
			var batch []events.SQSMessage
			for _, receives := range []string{"1", "2"} {
				m := order("m"+receives, "o-"+receives)
				m.EventSourceARN, m.ReceiptHandle = "arn:aws:sqs:eu-west-1:123456789012:orders", "rh-"+receives
				m.Attributes = map[string]string{"ApproximateReceiveCount": receives}
				batch = append(batch, m)
			}
			// An invocation shorter than the visibility timeout, as Lambda
			// requires of the function's timeout.
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			if _, err := h.Handle(ctx, events.SQSEvent{Records: batch}); !errors.Is(err, sqsbatch.ErrStoreDown) {
				t.Fatalf("Handle: %v, want ErrStoreDown", err)
			}
			q.mu.Lock()
			defer q.mu.Unlock()
			got := map[string]int32{}
			for _, c := range q.changes {
				var handle string
				var seconds int32
				if _, err := fmt.Sscanf(c, "http://sqs.local/orders %s %d", &handle, &seconds); err != nil {
					t.Fatalf("change %q: %v", c, err)
				}
				got[handle] = seconds
			}
			if len(got) != len(tt.want) {
				t.Fatalf("ChangeMessageVisibility calls %q, want %v seconds (or up to a quarter less)", q.changes, tt.want)
			}
			for handle, most := range tt.want {
				if got[handle] < most-most/4 || got[handle] > most {
					t.Errorf("%s hidden %ds, want %d to %d", handle, got[handle], most-most/4, most)
				}
			}
		})
	}
}
