// Command producer is the Lambda function that publishes messages to the
// queue without sending one twice, each keyed by its contract.KeyField.
// main only wires configuration and clients; the logic is in producer.go.
// OTEL_TRACES_EXPORTER=console traces its sends (tracing.go).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/functions/internal/tracing"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
)

func main() {
	cfg, err := contract.LoadProducer(os.Getenv)
	faults, ferr := loadFaults(os.Getenv)
	tp, _, terr := tracing.Setup(context.Background())
	if err := errors.Join(err, ferr, terr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	log := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: cfg.LogLevel}))

	awsCfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Error("aws configuration", slog.String("error", err.Error()))
		os.Exit(1)
	}
	receipts, err := dynamostore.New(dynamodb.NewFromConfig(awsCfg), cfg.Table)
	if err != nil {
		log.Error("idempotency store", slog.String("error", err.Error()))
		os.Exit(1)
	}
	var (
		store idem.Store = receipts
		queue SQS        = sqs.NewFromConfig(awsCfg)
	)
	store, queue = faults.wrap(store, queue)
	p, err := NewProducer(cfg, store, queue, log)
	if err != nil {
		log.Error("producer", slog.String("error", err.Error()))
		os.Exit(1)
	}
	p.traceWith(tp)
	lambda.Start(p.Handle)
}
