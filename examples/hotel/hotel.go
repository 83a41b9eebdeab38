// Package hotel confirms hotel bookings exactly once: a booking request
// arrives on the queue (possibly several times), and its reservation is
// written once, in the same DynamoDB transaction as its receipt.
//
// The write adds 1 to the reservation's "confirmations" on purpose: a
// double effect would show as 2.
package hotel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// The names the stack (infra) and the consumer share.
const (
	// KeyField is the business key: a booking is confirmed once per id.
	KeyField = "bookingId"
	// EnvReservationsTable names the reservations table for the consumer.
	EnvReservationsTable = "RESERVATIONS_TABLE"
	// Namespace is the consumer's idem namespace (receipts, metrics).
	Namespace = "bookings"
	// OutputReservationsTable is the stack output naming the table.
	OutputReservationsTable = "ReservationsTableName"
)

// ErrBadBooking: the body is not a valid booking. Retrying cannot fix it;
// the message ends in the dead-letter queue with this reason.
var ErrBadBooking = errors.New("hotel: malformed booking")

// Booking is the message body.
type Booking struct {
	ID      string `json:"bookingId"`
	Room    string `json:"room"`
	Guest   string `json:"guest"`
	CheckIn string `json:"checkIn"` // YYYY-MM-DD
	Nights  int    `json:"nights"`
}

// Confirmation is the effect's result, stored with the receipt and replayed
// to every copy of the booking.
type Confirmation struct {
	BookingID string `json:"bookingId"`
	Room      string `json:"room"`
}

// Reservations confirms bookings into a DynamoDB table keyed by KeyField.
type Reservations struct{ Table string }

// Confirm is the transactional effect: the reservation's write, returned
// for the runtime to commit with the receipt. It makes no call itself (it
// runs for duplicates too).
func (r Reservations) Confirm(_ context.Context, key string, msg events.SQSMessage) (idem.TxEffect, error) {
	var b Booking
	if err := json.Unmarshal([]byte(msg.Body), &b); err != nil {
		return idem.TxEffect{}, fmt.Errorf("%w: %v", ErrBadBooking, err)
	}
	if b.Room == "" || b.Nights < 1 {
		return idem.TxEffect{}, fmt.Errorf("%w: room %q, %d nights", ErrBadBooking, b.Room, b.Nights)
	}
	upd := expression.Add(expression.Name("confirmations"), expression.Value(1)).
		Set(expression.Name("room"), expression.Value(b.Room)).
		Set(expression.Name("guest"), expression.Value(b.Guest)).
		Set(expression.Name("checkIn"), expression.Value(b.CheckIn)).
		Set(expression.Name("nights"), expression.Value(b.Nights))
	expr, err := expression.NewBuilder().WithUpdate(upd).Build()
	if err != nil {
		return idem.TxEffect{}, fmt.Errorf("hotel: %w", err)
	}
	item, err := attributevalue.MarshalMap(map[string]string{KeyField: key})
	if err != nil {
		return idem.TxEffect{}, fmt.Errorf("hotel: %w", err)
	}
	result, err := json.Marshal(Confirmation{BookingID: key, Room: b.Room})
	if err != nil {
		return idem.TxEffect{}, err
	}
	return idem.TxEffect{Writes: []any{types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(r.Table),
		Key:                       item,
		UpdateExpression:          expr.Update(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	}}}, Result: result}, nil
}
