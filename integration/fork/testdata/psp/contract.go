// Package contract names what is the example's own, shared by its effect
// (functions/consumer/effect), its producer, its stack (infra/) and the
// proof (integration/): the business key, the effect's variables and
// tables (this file, which a fork edits with its effect), and the
// producer's variables (producer.go). What the runtime and the construct
// agree on is in pkg/idem/consumer.
package contract

import "github.com/exactlyonce/sqsidem/pkg/idem/consumer"

// KeyField is the business key: one order, its payment captured once. It
// is a field of the message body (the producer also sets it as the message
// attribute of that name), and the effect sends it to the payment service
// provider as the Idempotency-Key and in the capture's body.
const KeyField = "orderId"

// The effect's own variables.
const (
	EnvPSPURL = "PSP_URL" // the PSP's capture endpoint; required (lease mode)
)

// EffectTables are the effect's tables. Keep the declaration, empty if the
// effect writes none.
var EffectTables = []Table{}

// EffectSettings are the effect's plain variables. Keep the declaration,
// empty if the effect has none.
var EffectSettings = []Setting{
	// The effect is a capture at the PSP: without its URL the consumer
	// would capture nothing, so the app refuses to synthesize without one
	// (cdk deploy -c pspUrl=...); the test profiles point it at the
	// suite's partner, on the PSP's own path.
	{
		Env: EnvPSPURL, Context: "pspUrl", Valid: consumer.IsHTTPURL, Modes: []string{consumer.ModeLease},
		Required: true, Example: "https://psp.example/v1/captures", Suite: SuitePartner + "/v1/captures",
	},
}
