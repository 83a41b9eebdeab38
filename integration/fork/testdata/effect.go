// Package effect is the business effect: it reserves a hotel room per
// booking, exactly once. The room's availability goes down under a
// condition (never below zero) and the booking is recorded, both in the
// receipt's transaction (transactional mode).
package effect

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

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// Setup builds the effect at init: consumer.Start(effect.Setup).
func Setup(_ context.Context, rt *consumer.Runtime) (consumer.Effect, error) {
	r := &Rooms{rooms: rt.Env.Required(contract.EnvRoomsTable), bookings: rt.Env.Required(contract.EnvBookingsTable)}
	return consumer.Effect{Tx: r.Book}, nil
}

// ErrBadBooking: the body is not a valid booking; it ends in the DLQ.
var ErrBadBooking = errors.New("effect: malformed booking")

// Booking is the message body; its key (contract.KeyField) is the runtime's.
type Booking struct {
	RoomID string `json:"roomId"`
	Nights int    `json:"nights"`
}

// Rooms reserves rooms.
type Rooms struct {
	rooms, bookings string
}

// Book is the transactional effect: one night less for the room, if it has
// one, and the booking, committed with the receipt.
func (r *Rooms) Book(_ context.Context, key string, msg events.SQSMessage) (idem.TxEffect, error) {
	var b Booking
	if err := json.Unmarshal([]byte(msg.Body), &b); err != nil || b.RoomID == "" || b.Nights < 1 {
		return idem.TxEffect{}, fmt.Errorf("%w: want a roomId and nights >= 1", ErrBadBooking)
	}
	enough := expression.Name("available").GreaterThanEqual(expression.Value(1))
	take, err := update(r.rooms, "roomId", b.RoomID, expression.Add(expression.Name("available"), expression.Value(-1)), &enough)
	if err != nil {
		return idem.TxEffect{}, err
	}
	record, err := update(r.bookings, contract.KeyField, key,
		expression.Add(expression.Name("booked"), expression.Value(1)).
			Set(expression.Name("roomId"), expression.Value(b.RoomID)).
			Set(expression.Name("nights"), expression.Value(b.Nights)), nil)
	if err != nil {
		return idem.TxEffect{}, err
	}
	return idem.TxEffect{Writes: []any{types.TransactWriteItem{Update: take}, types.TransactWriteItem{Update: record}}}, nil
}

// update is an Update of the item whose keyName is key, under cond if it
// is not nil.
func update(table, keyName, key string, upd expression.UpdateBuilder, cond *expression.ConditionBuilder) (*types.Update, error) {
	b := expression.NewBuilder().WithUpdate(upd)
	if cond != nil {
		b = b.WithCondition(*cond)
	}
	expr, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("effect: expression: %w", err)
	}
	item, err := attributevalue.MarshalMap(map[string]string{keyName: key})
	if err != nil {
		return nil, err
	}
	return &types.Update{
		TableName: aws.String(table), Key: item, UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}, nil
}
