//go:build e2e

// The hotel stack proved by sqsidem's kit (integration/kit): `go tool
// onlocalstack` deploys it into LocalStack, runs TestBookings, destroys it
// and checks nothing is left.
package hotel_test

import (
	"strconv"
	"testing"

	"github.com/exactlyonce/sqsidem/integration/kit"

	"example.com/hotel"
)

var app = kit.App{Stack: "Hotel", Consumer: "Bookings",
	Message: func(key string, variant int) kit.Message {
		return kit.JSON(hotel.Booking{ID: key, Room: strconv.Itoa(101 + variant), Guest: "kit", CheckIn: "2026-12-24", Nights: 1})
	},
	Malformed: func(key string) kit.Message { return kit.JSON(hotel.Booking{ID: key}) }, // no room, no nights
	// A reservation's confirmations: a double booking would show as 2.
	Applied: kit.DynamoDBCounter(hotel.OutputReservationsTable, hotel.KeyField, "confirmations"),
}

func TestBookings(t *testing.T) { kit.Run(t, app) }
