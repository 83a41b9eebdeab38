package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
	"github.com/exactlyonce/sqsidem/pkg/idem/redisstore"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// Setup builds a team's effect at init, once per Lambda instance, from
// what rt gives it. It reads its own variables with rt.Env, whose problems
// are reported together with the runtime's; an error it returns stops the
// instance too.
type Setup func(ctx context.Context, rt *Runtime) (Effect, error)

// Runtime is what Start gives Setup.
type Runtime struct {
	// Config is the runtime's configuration, as loaded.
	Config Config
	// AWS is the SDK configuration of the instance (region, credentials,
	// endpoints), for the effect's own clients.
	AWS aws.Config
	// DynamoDB is a client the effect may share with the receipt store.
	DynamoDB *dynamodb.Client
	// Env reads the effect's own variables: rt.Env.Required("POINTS_TABLE").
	Env *Env
	// SecretsManager reads the effect's secrets (Secret); Start sets a
	// client of AWS.
	SecretsManager SecretsManagerAPI
	// Logger is the runtime's: JSON, at LOG_LEVEL.
	Logger *slog.Logger
}

// Start is the whole main of a consumer: it loads the configuration from
// the environment, runs setup, builds the store (IDEM_STORE), the Guard,
// the batch handler for IDEM_MODE, the metrics and the logs, and hands the
// handler to lambda.Start. When anything is wrong, it prints every problem
// found to stderr and exits 1: Lambda reports an init error, and the
// messages stay in the queue.
//
//	func main() { consumer.Start(setup) }
func Start(setup Setup, opts ...Option) {
	h, err := build(context.Background(), setup, os.Getenv, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	lambda.Start(h.Handle)
}

// build is Start without lambda.Start and os.Exit.
func build(ctx context.Context, setup Setup, getenv func(string) string, opts ...Option) (*Handler, error) {
	env := NewEnv(getenv)
	cfg := readConfig(env)
	o := resolve(cfg, opts)
	opts = append(opts, WithLogger(o.logger))
	faults := readFaults(env)

	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("consumer: AWS configuration: %w", err)
	}
	rt := &Runtime{
		Config: cfg, AWS: awsCfg, DynamoDB: dynamodb.NewFromConfig(awsCfg), Env: env, Logger: o.logger,
		SecretsManager: secretsmanager.NewFromConfig(awsCfg),
	}
	// A team's own WithBatchOptions come after, and may replace these.
	q := &queue{client: sqs.NewFromConfig(awsCfg)}
	opts = append([]Option{WithBatchOptions(sqsbatch.WithVisibility(q), sqsbatch.WithRequeue(q), sqsbatch.WithDelete(q))}, opts...)
	eff, setupErr := setup(ctx, rt)
	if setupErr == nil {
		eff.check(cfg, env)
	}
	if err := errors.Join(env.Err("consumer"), wrapSetup(setupErr)); err != nil {
		return nil, err
	}
	store, err := newStore(cfg, rt.DynamoDB)
	if err != nil {
		return nil, err
	}
	return New(cfg, store, faults.wrap(eff, o.logger), opts...)
}

func wrapSetup(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("consumer: setup: %w", err)
}

// newStore is the receipt store cfg names.
func newStore(cfg Config, ddb *dynamodb.Client) (idem.Store, error) {
	if cfg.Store == StoreRedis {
		ropts, err := redis.ParseURL(cfg.RedisURL)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrConfig, EnvRedisURL, err)
		}
		return redisstore.New(redis.NewClient(ropts))
	}
	return dynamostore.New(ddb, cfg.Table)
}
