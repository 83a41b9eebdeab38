package effect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

func newHandler(t *testing.T, store *idemtest.MemoryStore) *consumer.Handler {
	t.Helper()
	cfg, err := consumer.Load(func(k string) string {
		return map[string]string{consumer.EnvTable: "receipts", consumer.EnvKey: contract.KeyField, consumer.EnvMode: consumer.ModeTransactional}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &Rooms{rooms: "rooms", bookings: "bookings"}
	h, err := consumer.New(cfg, store, consumer.Effect{Tx: r.Book},
		consumer.WithMetrics(io.Discard), consumer.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestBookOnce: a booking delivered three times is committed once: one
// night less for its room, the booking recorded.
func TestBookOnce(t *testing.T) {
	store := idemtest.NewMemoryStore()
	h := newHandler(t, store)
	body, err := (&Probe{}).Message("b-1", 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for i := range 3 {
		resp, err := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: fmt.Sprint("m", i), Body: string(body)}}})
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("delivery %d: %+v, %v", i, resp, err)
		}
	}
	writes := store.Writes()
	if len(writes) != 2 {
		t.Fatalf("%d writes committed, want the room and the booking once", len(writes))
	}
	var tables []string
	for _, w := range writes {
		u := w.(types.TransactWriteItem).Update
		tables = append(tables, *u.TableName)
		if *u.TableName == "rooms" && (u.ConditionExpression == nil || !strings.Contains(*u.UpdateExpression, "ADD")) {
			t.Errorf("the room's update %+v: want a conditional ADD", u)
		}
	}
	if !slices.Equal(tables, []string{"rooms", "bookings"}) {
		t.Errorf("tables %v", tables)
	}
}

func TestBadBooking(t *testing.T) {
	r := &Rooms{rooms: "rooms", bookings: "bookings"}
	for _, body := range []string{`{"bookingId":"b-1"}`, `{"bookingId":"b-1","roomId":"r","nights":0}`, `nope`} {
		if _, err := r.Book(t.Context(), "b-1", events.SQSMessage{Body: body}); !errors.Is(err, ErrBadBooking) {
			t.Errorf("%s: err = %v, want ErrBadBooking", body, err)
		}
	}
}

// TestSetup: the effect's variables are required, and it has no lease mode.
func TestSetup(t *testing.T) {
	env := consumer.NewEnv(func(string) string { return "" })
	eff, err := Setup(t.Context(), &consumer.Runtime{Env: env})
	var cerr *consumer.ConfigError
	if err != nil || !errors.As(env.Err("effect"), &cerr) || !slices.Equal(cerr.Vars(), []string{contract.EnvBookingsTable, contract.EnvRoomsTable}) {
		t.Fatalf("Setup: %v; problems %v", err, env.Err("effect"))
	}
	if !slices.Equal(eff.Modes(), (&Probe{}).Modes()) {
		t.Errorf("the effect implements %v, the probe says %v", eff.Modes(), (&Probe{}).Modes())
	}
}
