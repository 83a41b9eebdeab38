// Command consumer confirms hotel bookings from the stack's queue, exactly
// once per booking id (transactional mode).
package main

import (
	"context"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"

	"example.com/hotel"
)

func main() { consumer.Start(setup) }

func setup(_ context.Context, rt *consumer.Runtime) (consumer.Effect, error) {
	reservations := hotel.Reservations{Table: rt.Env.Required(hotel.EnvReservationsTable)}
	// The key is the stack's (exactlyonce.Config.Key: IDEM_KEY, bookingId).
	return consumer.Effect{Tx: reservations.Confirm}, nil
}
