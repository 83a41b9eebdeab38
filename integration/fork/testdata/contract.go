// Package contract names what is the example's own, shared by its effect
// (functions/consumer/effect), its producer, its stack (infra/) and the
// proof (integration/): the business key, the effect's variables and
// tables (this file, which a fork edits with its effect), and the
// producer's variables (producer.go). What the runtime and the construct
// agree on is in pkg/idem/consumer.
package contract

// KeyField is the business key: one booking, reserved once.
const KeyField = "bookingId"

// The effect's own variables.
const (
	EnvRoomsTable    = "ROOMS_TABLE"    // rooms and their availability; required
	EnvBookingsTable = "BOOKINGS_TABLE" // one item per booking; required
)

// EffectTables are the effect's tables. Keep the declaration, empty if the
// effect writes none.
var EffectTables = []Table{
	// A booking takes one night of a room under a condition, and records
	// itself, in the receipt's transaction.
	{Env: EnvRoomsTable, PartitionKey: "roomId", Actions: []string{"dynamodb:UpdateItem"}},
	{Env: EnvBookingsTable, PartitionKey: KeyField, Actions: []string{"dynamodb:UpdateItem"}},
}

// EffectSettings are the effect's plain variables. Keep the declaration,
// empty if the effect has none.
var EffectSettings = []Setting{}
