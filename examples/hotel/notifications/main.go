// Command notifications posts each confirmed booking to the agency's
// webhook, at least once per booking id (lease mode, retry, no
// reconcile: the agency's endpoint cannot be asked).
package main

import (
	"context"
	"net/http"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"

	"example.com/hotel"
)

func main() { consumer.Start(setup) }

func setup(_ context.Context, rt *consumer.Runtime) (consumer.Effect, error) {
	url := rt.Env.HTTPURL(hotel.EnvWebhookURL)
	if url == "" {
		rt.Env.Fail(hotel.EnvWebhookURL, "required: the webhook's URL")
	}
	// No client timeout: the call is bounded by the attempt's context
	// (the lease), and a deadline is an unknown outcome, never definite.
	hook := hotel.Webhook{URL: url, Client: &http.Client{}}
	// The key is the stack's (exactlyonce.Config.Key: IDEM_KEY, bookingId).
	return consumer.Effect{Lease: hook.Notify}, nil
}
