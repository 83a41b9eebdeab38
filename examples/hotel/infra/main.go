// Command infra is the hotel's CDK app (cdk.json): its reservations table
// and an exactly-once consumer (infra/exactlyonce) that confirms bookings
// into it. The construct builds the consumer (./consumer) when the app
// synthesizes: for Lambda's arm64, or, under `go tool onlocalstack`, for
// this machine with LocalStack's preset.
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

	app.Synth(nil)
	return nil
}
