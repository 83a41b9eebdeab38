//go:build e2e

// The hotel stack proved by sqsidem's kit (integration/kit): `go tool
// onlocalstack -stub …` (make prove) deploys it into LocalStack with the
// kit's partner stub as the agency's webhook, runs TestBookings and
// TestNotifications side by side — one kit.Run per consumer of the stack,
// each checking the guarantee its consumer states — destroys it and
// checks nothing is left.
package hotel_test

import (
	"strconv"
	"testing"

	"github.com/exactlyonce/sqsidem/integration/kit"

	"example.com/hotel"
)

// booking is a valid booking for key; another variant books another room.
func booking(key string, variant int) kit.Message {
	return kit.JSON(hotel.Booking{ID: key, Room: strconv.Itoa(101 + variant), Guest: "kit", CheckIn: "2026-12-24", Nights: 1})
}

// malformed is a booking the effects refuse: no room, no nights.
func malformed(key string) kit.Message { return kit.JSON(hotel.Booking{ID: key}) }

// Transactional: exactly once.
var bookings = kit.App{Stack: "Hotel", Consumer: "Bookings", Message: booking, Malformed: malformed,
	// A reservation's confirmations: a double booking would show as 2.
	Applied: kit.DynamoDBCounter(hotel.OutputReservationsTable, hotel.KeyField, "confirmations"),
}

// Lease mode, retry, no reconcile: at least once, a second call only
// after an unknown outcome, counted.
var notifications = kit.App{Stack: "Hotel", Consumer: "Notifications", Message: booking, Malformed: malformed,
	// The webhook calls the stub received per booking: a double shows as 2.
	Applied: kit.StubApplied(),
}

func TestBookings(t *testing.T) {
	t.Parallel()
	kit.Run(t, bookings)
}

func TestNotifications(t *testing.T) {
	t.Parallel()
	kit.Run(t, notifications)
}
