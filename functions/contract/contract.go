// Package contract names what is the example's own, shared by its effect
// (functions/consumer/effect), its producer, its stack (infra/) and the
// proof (integration/): the business key, the effect's variables and
// tables (this file, which a fork edits with its effect), and the
// producer's variables (producer.go). What the runtime and the construct
// agree on is in pkg/idem/consumer.
package contract

import "github.com/exactlyonce/sqsidem/pkg/idem/consumer"

// KeyField is the business key, the identity of an effect: the message
// attribute the producer sets and the body field it is read from. The
// stack passes it to the construct (IDEM_KEY), the consumer keys records
// by it (consumer.KeyField), the probe builds messages with it, and the
// ledger is keyed by it.
const KeyField = "orderId"

// The effect's own variables.
const (
	EnvLedgerTable = "LEDGER_TABLE" // the gift-card ledger; required
	EnvEffectURL   = "EFFECT_URL"   // optional: also POST each issuance here, lease mode only
)

// EffectTables are the effect's tables. Keep the declaration, empty if the
// effect writes none.
var EffectTables = []Table{
	// One item per order; ADD issued 1, directly (lease mode) or inside
	// the receipt's transaction (transactional mode). Lease mode's
	// Reconcile reads the item (GetItem) to tell whether an unknown
	// outcome had issued the card.
	{Env: EnvLedgerTable, PartitionKey: KeyField, Actions: []string{"dynamodb:GetItem", "dynamodb:UpdateItem"}},
}

// EffectSettings are the effect's plain variables. Keep the declaration,
// empty if the effect has none.
var EffectSettings = []Setting{
	// Transactional mode commits DynamoDB writes only: the effect would
	// never call the URL, and refuses it. A fork whose effect cannot work
	// without its remote system marks its URL Required.
	{
		Env: EnvEffectURL, Context: "effectUrl", Valid: consumer.IsHTTPURL, Modes: []string{consumer.ModeLease},
		Example: "https://partner.example/cards",
	},
}
