// Package contract names what is the example's own, shared by its effect
// (functions/consumer/effect), its producer, its stack (infra/) and the
// proof (integration/): the business key, the effect's variables and
// tables (this file, which a fork edits with its effect), and the
// producer's variables (producer.go). What the runtime and the construct
// agree on is in pkg/idem/consumer.
package contract

import "github.com/exactlyonce/sqsidem/pkg/idem/consumer"

// KeyField is the business key: one payment, notified to the partner once.
// The producer sets it as the message attribute of that name (from the
// body's field), the consumer keys records by the attribute, and the
// effect sends it to the partner as the Idempotency-Key.
const KeyField = "paymentId"

// The effect's own variables.
const (
	EnvPartnerURL = "PARTNER_URL" // the payment partner's notification endpoint; required (lease mode)
)

// EffectTables are the effect's tables. Keep the declaration, empty if the
// effect writes none.
var EffectTables = []Table{}

// EffectSettings are the effect's plain variables. Keep the declaration,
// empty if the effect has none.
var EffectSettings = []Setting{
	// The effect is a call to the partner: without its URL the consumer
	// would notify nobody, so the app refuses to synthesize without one
	// (cdk deploy -c partnerUrl=...); the test profiles point it at the
	// suite's partner.
	{
		Env: EnvPartnerURL, Context: "partnerUrl", Valid: consumer.IsHTTPURL, Modes: []string{consumer.ModeLease},
		Required: true, Example: "https://payments.example/notify", Suite: SuitePartner + "/effects",
	},
}
