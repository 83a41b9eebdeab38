package hotel_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"

	"example.com/hotel"
)

// Copies of a booking in one batch commit one reservation write; a
// malformed booking fails alone.
func TestConfirmOnce(t *testing.T) {
	cfg, err := consumer.Load(func(name string) string {
		return map[string]string{consumer.EnvTable: "receipts", consumer.EnvMode: consumer.ModeTransactional}[name]
	})
	if err != nil {
		t.Fatal(err)
	}
	store := idemtest.NewMemoryStore()
	reservations := hotel.Reservations{Table: "reservations"}
	h, err := consumer.New(cfg, store, consumer.Effect{Key: consumer.KeyField(hotel.KeyField), Tx: reservations.Confirm},
		consumer.WithMetrics(io.Discard), consumer.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	booking := `{"bookingId":"b-1","room":"101","guest":"Ada","checkIn":"2026-12-24","nights":3}`
	resp, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", Body: booking},
		{MessageId: "m2", Body: booking},
		{MessageId: "m3", Body: `{"bookingId":"b-2","room":"","nights":0}`},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m3" {
		t.Errorf("batch item failures %+v, want m3's only", resp.BatchItemFailures)
	}
	writes := store.Writes()
	if len(writes) != 1 {
		t.Fatalf("%d writes committed, want 1", len(writes))
	}
	if w, ok := writes[0].(types.TransactWriteItem); !ok || w.Update == nil || *w.Update.TableName != "reservations" {
		t.Errorf("committed %#v, want an Update of the reservations table", writes[0])
	}
}
