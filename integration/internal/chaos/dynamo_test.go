package chaos

import (
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/integration/internal/faultproxy"
)

func TestDynamoLostAckOnTheEffectInLeaseMode(t *testing.T) {
	effectWrite := faultproxy.Request{Op: "UpdateItem", Body: []byte(`{"Key":{"id":{"S":"o-1"}},"TableName":"Ledger-x","UpdateExpression":"ADD #0 :0"}`)}
	receipt := faultproxy.Request{Op: "UpdateItem", Body: []byte(`{"Key":{"pk":{"S":"consumer#ab"}},"TableName":"Receipts-x"}`)}
	for _, c := range []struct {
		lease   bool
		req     faultproxy.Request
		want    faultproxy.Kind
		comment string
	}{
		{true, effectWrite, faultproxy.Fail, "lease mode: a lost ack on the effect's write would be the SDK's double effect"},
		{true, receipt, faultproxy.LoseAck, "lease mode: receipts get lost acks"},
		{false, effectWrite, faultproxy.LoseAck, "transactional mode: everything gets lost acks"},
	} {
		d := &Dynamo{Rates: Rates{LoseAck: 1}, ReceiptTable: "Receipts-x", LeaseMode: c.lease}
		if got := d.Decider()(c.req).Kind; got != c.want {
			t.Errorf("%s: %v, want %v", c.comment, got, c.want)
		}
	}
}

// TestDynamoLeaseModeTraffic: in lease mode the template's effect is a
// call to the partner, so every consumer request is the receipt store's
// and gets the whole mix, lost acks included; a request to another table
// (an effect writing DynamoDB itself) is counted apart.
func TestDynamoLeaseModeTraffic(t *testing.T) {
	d := &Dynamo{Rates: Rates{LoseAck: 1}, ReceiptTable: "Receipts-x", LeaseMode: true}
	decide := d.Decider()
	for _, op := range []string{"UpdateItem", "PutItem", "GetItem"} {
		if got := decide(faultproxy.Request{Op: op, Body: []byte(`{"TableName":"Receipts-x","Key":{"pk":{"S":"consumer#ab"}}}`)}).Kind; got != faultproxy.LoseAck {
			t.Errorf("receipt %s: %v, want a lost ack", op, got)
		}
	}
	decide(faultproxy.Request{Op: "UpdateItem", Body: []byte(`{"TableName":"Ledger-x","Key":{"id":{"S":"o-1"}}}`)})
	c := d.Counts()
	if c["consumer UpdateItem"] != 1 || c["consumer PutItem"] != 1 || c["consumer GetItem"] != 1 || c["consumer effect UpdateItem"] != 1 {
		t.Fatalf("counts %v", c)
	}
}

func TestDynamoMixAndCounts(t *testing.T) {
	d := &Dynamo{Rates: Rates{Throttle: 0.1, Fail: 0.1, LoseAck: 0.1}, ReceiptTable: "R", Seed: 5}
	decide := d.Decider()
	producer := faultproxy.Request{Op: "UpdateItem", Body: []byte(`{"Key":{"pk":{"S":"producer#00"}}}`)}
	consumer := faultproxy.Request{Op: "TransactWriteItems", Body: []byte(`{"TransactItems":[]}`)}
	for range 5000 {
		decide(producer)
		decide(consumer)
	}
	c, f := d.Counts(), d.Faults()
	if c["producer UpdateItem"] != 5000 || c["consumer TransactWriteItems"] != 5000 {
		t.Fatalf("counts %v", c)
	}
	for _, kind := range []string{"throttle", "fail", "lose-ack"} {
		if f[kind] < 800 || f[kind] > 1200 {
			t.Errorf("%s: %d of 10000, want about 1000", kind, f[kind])
		}
	}
}

// TestDynamoOutage: during the outage every request of the consumers is
// throttled, the producer's are not; before and after, the mix applies.
func TestDynamoOutage(t *testing.T) {
	consumer := faultproxy.Request{Op: "TransactWriteItems", Body: []byte(`{"TransactItems":[]}`)}
	producer := faultproxy.Request{Op: "UpdateItem", Body: []byte(`{"Key":{"pk":{"S":"producer#00"}}}`)}
	for _, c := range []struct {
		began    time.Duration // ago
		consumer faultproxy.Kind
	}{
		{time.Minute, faultproxy.Throttle}, // in the outage
		{time.Second, 0},                   // before it
		{time.Hour, 0},                     // after it
	} {
		d := &Dynamo{Outage: Outage{After: 30 * time.Second, For: 5 * time.Minute}}
		decide := d.Decider()
		d.Begin(time.Now().Add(-c.began))
		if got := decide(consumer).Kind; got != c.consumer {
			t.Errorf("begun %s ago: consumer request %v, want %v", c.began, got, c.consumer)
		}
		if got := decide(producer).Kind; got != 0 {
			t.Errorf("begun %s ago: producer request %v, want none", c.began, got)
		}
	}
}
