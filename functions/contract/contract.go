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
	EnvEffectURL   = "EFFECT_URL"   // the partner that issues the cards; required in lease mode
)

// EffectTables are the effect's tables. Keep the declaration, empty if the
// effect writes none.
var EffectTables = []Table{
	// One item per order; ADD issued 1 inside the receipt's transaction
	// (transactional mode; lease mode calls the partner instead).
	{Env: EnvLedgerTable, PartitionKey: KeyField, Actions: []string{"dynamodb:UpdateItem"}},
}

// EffectSettings are the effect's plain variables. Keep the declaration,
// empty if the effect has none.
var EffectSettings = []Setting{
	// Lease mode's effect is a call to the partner: without its URL the
	// consumer would issue nothing, so the app refuses to synthesize
	// without one (cdk deploy -c effectUrl=...); the test profiles point it
	// at the suite's partner. Transactional mode commits DynamoDB writes
	// only: the effect would never call the URL, and refuses it.
	{
		Env: EnvEffectURL, Context: "effectUrl", Valid: consumer.IsHTTPURL, Modes: []string{consumer.ModeLease},
		Required: true, Example: "https://partner.example/cards", Suite: SuitePartner + "/effects",
	},
}
