// Command consumer is the SQS-triggered Lambda function that issues a gift
// card per order exactly once. main only wires configuration and clients;
// the logic is in handler.go and the business effect in effect.go.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
)

func main() {
	cfg, err := contract.LoadConsumer(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	log := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: cfg.LogLevel}))

	awsCfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Error("aws configuration", slog.String("error", err.Error()))
		os.Exit(1)
	}
	ddb := dynamodb.NewFromConfig(awsCfg)
	store, err := dynamostore.New(ddb, cfg.IdemTable)
	if err != nil {
		log.Error("idempotency store", slog.String("error", err.Error()))
		os.Exit(1)
	}
	client := &http.Client{}
	var effect Effect = NewGiftCards(ddb, cfg.LedgerTable, cfg.EffectURL, client)
	effect = withFaults(effect, client, log) // FAULTS: test-only switches (faults.go); a fork deletes this line and faults.go
	c, err := NewConsumer(cfg, store, effect, log, os.Stdout)
	if err != nil {
		log.Error("consumer", slog.String("error", err.Error()))
		os.Exit(1)
	}
	lambda.Start(c.Handle)
}
