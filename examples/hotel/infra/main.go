// Command infra is the hotel's CDK app (cdk.json): one stack with its
// reservations table and two consumers (infra/exactlyonce): Bookings
// confirms bookings into the table (transactional: exactly once), and
// Notifications posts each confirmed booking to the agency's webhook
// (lease mode, retry, no reconcile: at least once). The construct builds
// each consumer (./consumer, ./notifications) when the app synthesizes:
// for Lambda's arm64, or, under `go tool onlocalstack`, for this machine
// with LocalStack's preset.
//
// Context (-c key=value):
//
//	webhookUrl  the agency's webhook (required; WEBHOOK_URL)
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/jsii-runtime-go"

	"github.com/exactlyonce/sqsidem/infra/exactlyonce"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"

	"example.com/hotel"
)

func main() {
	err := run()
	jsii.Close() // stop the node child process before exiting
	if err != nil {
		fmt.Fprintln(os.Stderr, "infra:", err)
		os.Exit(1)
	}
}

func run() error {
	app := awscdk.NewApp(nil)
	webhook, _ := app.Node().TryGetContext(jsii.String("webhookUrl")).(string)
	if !consumer.IsHTTPURL(webhook) {
		return fmt.Errorf("-c webhookUrl=%q: want the agency's webhook, an absolute http(s) URL", webhook)
	}
	// An example: destroying the stack deletes its data too. A real
	// service keeps the default, RemovalPolicy_RETAIN.
	// Key: the business key, passed to the function (IDEM_KEY) and output
	// (BookingsKey) for idemctl.
	cfg := exactlyonce.Config{
		Mode: consumer.ModeTransactional, Namespace: hotel.Namespace, Key: hotel.KeyField,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	}
	stack := awscdk.NewStack(app, jsii.String("Hotel"), nil)

	reservations := awsdynamodb.NewTable(stack, jsii.String("Reservations"), &awsdynamodb.TableProps{
		PartitionKey:                     &awsdynamodb.Attribute{Name: jsii.String(hotel.KeyField), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:                      awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: exactlyonce.PointInTimeRecovery(),
		RemovalPolicy:                    cfg.RemovalPolicy,
	})
	awscdk.NewCfnOutput(stack, jsii.String(hotel.OutputReservationsTable), &awscdk.CfnOutputProps{Value: reservations.TableName()})

	// The exactly-once consumer: queue, DLQ, receipts, function, alarms,
	// dashboard and their outputs (Bookings + consumer.Output*).
	bookings := exactlyonce.NewConsumer(stack, "Bookings", &exactlyonce.ConsumerProps{
		Main:        "./consumer", // built when the app synthesizes
		Config:      cfg,
		Environment: map[string]*string{hotel.EnvReservationsTable: reservations.TableName()},
		Nag:         true, // cdk-nag's packs on the consumer's resources: a finding fails the synth
	})
	reservations.Grant(bookings.Function, jsii.String("dynamodb:UpdateItem"))

	// The second consumer, its own queue, receipts, alarms and dashboard
	// (Notifications + consumer.Output*): a lease-mode effect, a call to an
	// endpoint that cannot be asked, so no Reconcile; retry runs an
	// unknown outcome again, counted (Rerun), and the agency deduplicates
	// by the Idempotency-Key.
	exactlyonce.NewConsumer(stack, "Notifications", &exactlyonce.ConsumerProps{
		Main: "./notifications",
		Config: exactlyonce.Config{
			Mode: consumer.ModeLease, UnknownOutcome: consumer.UnknownRetry,
			Namespace: hotel.NotificationsNamespace, Key: hotel.KeyField,
			RemovalPolicy: cfg.RemovalPolicy,
		},
		Environment: map[string]*string{hotel.EnvWebhookURL: jsii.String(webhook)},
		Nag:         true,
	})

	app.Synth(nil)
	return nil
}
