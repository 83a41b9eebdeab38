//go:build e2e

// The hotel stack as integration/scripts/e2e-example.sh deploys it into
// LocalStack, proved by sqsidem's kit (integration/kit): TestBookings
// drives it; TestNothingLeft runs after the stack is destroyed.
package hotel_test

import (
	"strconv"
	"testing"

	"github.com/exactlyonce/sqsidem/integration/kit"

	"example.com/hotel"
)

var app = kit.App{Stack: "HotelLocal", Consumer: "Bookings",
	Message: func(key string, variant int) kit.Message {
		return kit.JSON(hotel.Booking{ID: key, Room: strconv.Itoa(101 + variant), Guest: "kit", CheckIn: "2026-12-24", Nights: 1})
	},
	Malformed: func(key string) kit.Message { return kit.JSON(hotel.Booking{ID: key}) }, // no room, no nights
	// A reservation's confirmations: a double booking would show as 2.
	Applied: kit.DynamoDBCounter(hotel.OutputReservationsTable, hotel.KeyField, "confirmations"),
}

func TestBookings(t *testing.T)    { kit.Run(t, app) }
func TestNothingLeft(t *testing.T) { kit.NothingLeft(t, app.Stack, nil) }
