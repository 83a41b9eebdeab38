package main

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/infra/exactlyonce"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// The app's names, mode and unknown-outcome policy, in one place: what a
// fork edits here.
const (
	// StackName is the stack of the default and hardened profiles; the
	// test and localstack profiles deploy StackName+"Test" and
	// StackName+"Local" (-c stackName= overrides any).
	StackName = "SqsIdem"
	// Namespace is the consumer's idem namespace: the receipts' key prefix
	// and the metrics' Namespace dimension. Changing it for a deployed
	// stack makes every retained receipt invisible.
	Namespace = consumer.DefaultNamespace
	// Mode is the consumer's mode in every profile: consumer.ModeLease (any
	// effect), or consumer.ModeTransactional when the effect is DynamoDB
	// writes only (exactly once, no window). The integration suite runs
	// the scenarios of a mode in that mode whatever this says.
	Mode = consumer.ModeLease
	// UnknownOutcome is what the consumer does, in lease mode and in every
	// profile, with an unknown outcome (a crash, a timeout, an error not
	// marked idem.Definite) that the effect's Reconcile could not settle or
	// that it has none for: consumer.UnknownRetry runs the effect again
	// (without a Reconcile: at least once, a second effect counted as
	// Rerun), consumer.UnknownHold parks the key HELD for an operator
	// (without a Reconcile: at most once; docs/template.md, "A remote that
	// cannot be asked"). Transactional mode never leaves an unknown
	// outcome: there the profiles take the construct's default (retry,
	// which does nothing there). -c unknownOutcome= overrides it.
	UnknownOutcome = consumer.UnknownRetry
)

// unknownOutcomeIn is the app's policy in mode: UnknownOutcome in lease
// mode, the construct's default in transactional mode (which refuses
// hold: it would hold nothing).
func unknownOutcomeIn(mode string) string {
	if mode == consumer.ModeTransactional {
		return consumer.DefaultUnknownOutcome
	}
	return UnknownOutcome
}

// Config is the app's single source of truth: the consumer's settings
// (exactlyonce.Config, validated there) and the example's own. The producer
// shares FunctionTimeout, MemoryMB, Tracing, RemovalPolicy and LogRetention
// with the consumer.
type Config struct {
	exactlyonce.Config
	// Effect holds values of the effect's plain variables
	// (contract.EffectSettings), by variable; a variable without one is
	// not set on the consumer. A setting Required in the mode must have
	// one: the production profiles leave that to cdk deploy -c, the test
	// profiles give the suite's (contract.Setting.Suite).
	Effect map[string]string
	// CustomerManagedKey: one customer-managed KMS key (rotation on)
	// encrypts the queues, all tables, both log groups and both functions'
	// environments instead of AWS-managed keys.
	CustomerManagedKey bool
	// ProducerReservedConcurrency reserves (and caps) the producer's
	// concurrency; 0 reserves none.
	ProducerReservedConcurrency int
}

// base is the app's configuration without a mode: every profile states
// its own, and Validate refuses none.
func base() Config {
	c := Config{Config: exactlyonce.DefaultConfig(), Effect: map[string]string{}}
	c.Namespace, c.Key, c.Mode = Namespace, contract.KeyField, ""
	return c
}

// DefaultConfig is the production profile. Its effect settings are the
// deployment's (cdk deploy -c effectUrl=...); its mode and unknown-outcome
// policy are the app's (Mode, UnknownOutcome).
func DefaultConfig() Config {
	c := base()
	c.Mode, c.UnknownOutcome = Mode, unknownOutcomeIn(Mode)
	return c
}

// TestConfig is the integration-suite profile: short timeouts so that
// redelivery and dead-lettering happen within seconds, everything is
// destroyed with the stack, and the effect's settings are the suite's
// (suiteEffect).
func TestConfig() Config {
	c := base()
	c.Mode, c.UnknownOutcome = Mode, unknownOutcomeIn(Mode)
	c.Effect = suiteEffect(contract.EffectSettings, c.Mode)
	c.FunctionTimeout = 2 * time.Second // visibility 12s
	c.MaxReceiveCount = 3
	c.SafetyMargin = 500 * time.Millisecond
	c.RemovalPolicy = awscdk.RemovalPolicy_DESTROY
	c.LogRetention = awslogs.RetentionDays_ONE_WEEK
	return c
}

// LocalStackConfig is the test profile for LocalStack, whose requests take
// about 2.5 times as long as the lightweight emulators' on the same machine:
// the construct's LocalStack preset (exactlyonce.Config.LocalStack: a 4 s
// function, visibility 24 s, a 1 s safety margin), everything else (the
// mode included) as in TestConfig. The suite provisions from it when it
// runs on LocalStack, and `make deploy-local` deploys it.
func LocalStackConfig() Config {
	c := TestConfig()
	c.Config = c.Config.LocalStack()
	return c
}

// HardenedConfig is the production profile (its mode included) with
// customer-managed keys and reserved concurrency, as compliance scanners
// (checkov) expect. Reserving concurrency takes it from the account's
// pool: an account needs at least ConsumerReserved + ProducerReserved +
// 100 (the unreserved minimum) as its concurrency quota.
func HardenedConfig() Config {
	c := DefaultConfig()
	c.CustomerManagedKey = true
	// The mapping never runs more than MaxConcurrency consumers at once;
	// reserving exactly that guarantees them without holding more.
	c.ReservedConcurrency = c.MaxConcurrency
	// The producer is invoked synchronously by clients and schedulers; 10
	// concurrent runs (each guarding PRODUCER_CONCURRENCY messages) is
	// plenty and keeps a runaway caller from starving the account.
	c.ProducerReservedConcurrency = 10
	return c
}

// Profiles are the names -c profile= takes.
func Profiles() []string { return []string{"default", "test", "localstack", "hardened"} }

// profile is the configuration selected with -c profile=<name>, and its
// stack name. The hardened profile deploys as the same stack as the
// default one: it is the same system, encrypted differently.
func profile(name string) (Config, string, error) {
	switch name {
	case "", "default":
		return DefaultConfig(), StackName, nil
	case "test":
		return TestConfig(), StackName + "Test", nil
	case "localstack":
		return LocalStackConfig(), StackName + "Local", nil
	case "hardened":
		return HardenedConfig(), StackName, nil
	}
	return Config{}, "", fmt.Errorf("unknown profile %q (want one of %v)", name, Profiles())
}

// Validate reports every violated constraint at once: the consumer's
// (exactlyonce.Config.Validate) and the app's.
func (c Config) Validate() error {
	errs := []error{c.Config.Validate()}
	errs = append(errs, checkEffect(contract.EffectSettings, c.Mode, c.Effect)...)
	if c.ProducerReservedConcurrency < 0 {
		errs = append(errs, fmt.Errorf("ProducerReservedConcurrency must be 0 (none) or positive, got %d", c.ProducerReservedConcurrency))
	}
	return errors.Join(errs...)
}

// checkEffect reports what is wrong with effect, values of settings by
// variable, in mode: a variable that is no setting, an invalid value, a
// setting given in a mode it may not be set in, a required one missing.
func checkEffect(settings []contract.Setting, mode string, effect map[string]string) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	byEnv := map[string]contract.Setting{}
	for _, s := range settings {
		byEnv[s.Env] = s
	}
	for _, name := range slices.Sorted(maps.Keys(effect)) {
		v, s := effect[name], byEnv[name]
		switch {
		case s.Env == "":
			bad("Effect sets %s, which is not one of the effect's settings (contract.EffectSettings)", name)
		case s.Valid != nil && !s.Valid(v):
			bad("Effect: %s=%q is not valid", name, v)
		case !s.AllowedIn(mode):
			bad("Effect: %s may only be set in %v mode, not %s", name, s.Modes, mode)
		}
	}
	for _, s := range settings {
		if s.Required && s.AllowedIn(mode) && effect[s.Env] == "" {
			bad("%s is required in %s mode: cdk deploy -c %s=%s", s.Context, mode, s.Context, cmp.Or(s.Example, "<value>"))
		}
	}
	return errs
}

// suiteEffect is the test profiles' effect settings in mode: the suite's
// value (contract.Setting.Suite) of each setting that has one and may be
// set in mode.
func suiteEffect(settings []contract.Setting, mode string) map[string]string {
	effect := map[string]string{}
	for _, s := range settings {
		if s.Suite != "" && s.AllowedIn(mode) {
			effect[s.Env] = s.Suite
		}
	}
	return effect
}
