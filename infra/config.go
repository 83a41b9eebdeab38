package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/infra/exactlyonce"
)

// Config is the app's single source of truth: the consumer's settings
// (exactlyonce.Config, validated there) and the example's own. The producer
// shares FunctionTimeout, MemoryMB, RemovalPolicy and LogRetention with the
// consumer.
type Config struct {
	exactlyonce.Config
	// EffectURL is an optional external endpoint the consumer calls as its
	// side effect; empty means the env var is not set. Otherwise an absolute
	// http(s) URL with a host (contract.IsHTTPURL).
	EffectURL string
	// CustomerManagedKey: one customer-managed KMS key (rotation on)
	// encrypts the queues, both tables, both log groups and both functions'
	// environments instead of AWS-managed keys.
	CustomerManagedKey bool
	// ProducerReservedConcurrency reserves (and caps) the producer's
	// concurrency; 0 reserves none.
	ProducerReservedConcurrency int
}

// DefaultConfig is the production profile.
func DefaultConfig() Config {
	return Config{Config: exactlyonce.DefaultConfig()}
}

// TestConfig is the integration-suite profile: short timeouts so that
// redelivery and dead-lettering happen within seconds, and everything is
// destroyed with the stack.
func TestConfig() Config {
	c := DefaultConfig()
	c.FunctionTimeout = 2 * time.Second // visibility 12s
	c.MaxReceiveCount = 3
	c.SafetyMargin = 500 * time.Millisecond
	c.RemovalPolicy = awscdk.RemovalPolicy_DESTROY
	c.LogRetention = awslogs.RetentionDays_ONE_WEEK
	return c
}

// LocalStackConfig is the test profile for LocalStack, whose requests take
// about 2.5 times as long as the lightweight emulators' on the same machine:
// a function timeout and safety margin with room for that, everything else
// as in TestConfig. The suite provisions from it when it runs on LocalStack,
// and `make deploy-local` deploys it.
func LocalStackConfig() Config {
	c := TestConfig()
	c.FunctionTimeout = 4 * time.Second // visibility 24s
	c.SafetyMargin = time.Second
	return c
}

// HardenedConfig is the production profile with customer-managed keys and
// reserved concurrency, as compliance scanners (checkov) expect. Reserving
// concurrency takes it from the account's pool: an account needs at least
// ConsumerReserved + ProducerReserved + 100 (the unreserved minimum) as its
// concurrency quota.
func HardenedConfig() Config {
	c := DefaultConfig()
	c.CustomerManagedKey = true
	// The mapping never runs more than MaxConcurrency consumers at once;
	// reserving exactly that guarantees them without holding more.
	c.ReservedConcurrency = c.MaxConcurrency
	// The producer is invoked synchronously by clients and schedulers; 10
	// concurrent runs (each guarding PRODUCER_CONCURRENCY orders) is plenty
	// and keeps a runaway caller from starving the account.
	c.ProducerReservedConcurrency = 10
	return c
}

// profile is the configuration selected with -c profile=<name>, and its
// default stack name. The hardened profile deploys as the same stack as the
// default one: it is the same system, encrypted differently.
func profile(name string) (Config, string, error) {
	switch name {
	case "", "default":
		return DefaultConfig(), "SqsIdem", nil
	case "test":
		return TestConfig(), "SqsIdemTest", nil
	case "localstack":
		return LocalStackConfig(), "SqsIdemLocal", nil
	case "hardened":
		return HardenedConfig(), "SqsIdem", nil
	}
	return Config{}, "", fmt.Errorf("unknown profile %q (want default, test, localstack or hardened)", name)
}

// Validate reports every violated constraint at once: the consumer's
// (exactlyonce.Config.Validate) and the app's.
func (c Config) Validate() error {
	errs := []error{c.Config.Validate()}
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.EffectURL != "" && !contract.IsHTTPURL(c.EffectURL) {
		bad("EffectURL %q is not an absolute http(s) URL", c.EffectURL)
	}
	if c.Mode == contract.ModeTransactional && c.EffectURL != "" {
		// The consumer refuses this: a transactional effect may only be
		// DynamoDB writes, committed together with the receipt.
		bad("EffectURL must be empty in %s mode", contract.ModeTransactional)
	}
	if c.ProducerReservedConcurrency < 0 {
		bad("ProducerReservedConcurrency must be 0 (none) or positive, got %d", c.ProducerReservedConcurrency)
	}
	return errors.Join(errs...)
}
