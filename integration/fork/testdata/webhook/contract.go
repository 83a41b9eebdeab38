// Package contract names what is the example's own, shared by its effect
// (functions/consumer/effect), its producer, its stack (infra/) and the
// proof (integration/): the business key, the effect's variables and
// tables (this file, which a fork edits with its effect), and the
// producer's variables (producer.go). What the runtime and the construct
// agree on is in pkg/idem/consumer.
package contract

import "github.com/exactlyonce/sqsidem/pkg/idem/consumer"

// KeyField is the business key: one event of an order, delivered to the
// customer's webhook. The producer sets it as the message attribute of
// that name (from the body's field); the effect sends it as the
// Idempotency-Key and the Webhook-Id, so that a customer who deduplicates
// can.
const KeyField = "eventId"

// The effect's own variables.
const (
	EnvWebhookURL = "WEBHOOK_URL" // the customer's endpoint; required (lease mode)
)

// EffectTables are the effect's tables. Keep the declaration, empty if the
// effect writes none.
var EffectTables = []Table{}

// EffectSettings are the effect's plain variables. Keep the declaration,
// empty if the effect has none.
var EffectSettings = []Setting{
	// The effect is a POST to the customer's endpoint: without its URL
	// the consumer would deliver nothing, so the app refuses to
	// synthesize without one (cdk deploy -c webhookUrl=...); the test
	// profiles point it at the suite's partner, on the endpoint's path.
	{
		Env: EnvWebhookURL, Context: "webhookUrl", Valid: consumer.IsHTTPURL, Modes: []string{consumer.ModeLease},
		Required: true, Example: "https://customer.example/hooks/orders", Suite: SuitePartner + "/hooks/orders",
	},
}
