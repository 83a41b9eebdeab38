package consumer

import (
	"cmp"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// GuardConfig is the settings of an idem Guard: Config's, and those of
// another function that keeps receipts in the same table (a producer),
// read with ReadGuardConfig.
type GuardConfig struct {
	Namespace    string        // EnvNamespace
	Retention    time.Duration // EnvRetention, default DefaultRetention
	SafetyMargin time.Duration // EnvSafetyMargin, default DefaultSafetyMargin
	Lease        time.Duration // EnvLease, 0: the remaining Lambda time
	CacheSize    int           // EnvCacheSize, default DefaultCacheSize, 0: off
}

// Options are the idem options the settings imply.
func (g GuardConfig) Options() []idem.Option {
	opts := []idem.Option{idem.WithRetention(g.Retention), idem.WithSafetyMargin(g.SafetyMargin)}
	if g.Lease > 0 {
		opts = append(opts, idem.WithLease(g.Lease))
	}
	if g.CacheSize > 0 {
		opts = append(opts, idem.WithCache(g.CacheSize))
	}
	return opts
}

// ReadGuardConfig reads the Guard settings from e; namespace is the
// default of EnvNamespace.
func ReadGuardConfig(e *Env, namespace string) GuardConfig {
	g := GuardConfig{
		Namespace:    e.String(EnvNamespace, namespace),
		Retention:    e.Duration(EnvRetention, DefaultRetention),
		SafetyMargin: e.Duration(EnvSafetyMargin, DefaultSafetyMargin),
		Lease:        e.Duration(EnvLease, 0),
		CacheSize:    e.Int(EnvCacheSize, DefaultCacheSize, 0),
	}
	if g.Lease != 0 && g.Lease <= g.SafetyMargin {
		e.Fail(EnvLease, "%s leaves no time for the effect after the %s safety margin", g.Lease, g.SafetyMargin)
	}
	return g
}

// Guard is GuardConfig's name before v0.3.0: settings, not an idem.Guard.
//
// Deprecated: use GuardConfig. Removed in v0.4.0.
type Guard = GuardConfig

// ReadGuard is ReadGuardConfig's name before v0.3.0.
//
// Deprecated: use ReadGuardConfig. Removed in v0.4.0.
func ReadGuard(e *Env, namespace string) GuardConfig { return ReadGuardConfig(e, namespace) }

// Config is the runtime's configuration: what the construct sets in the
// function's environment (see names.go), read by Load.
type Config struct {
	GuardConfig             // namespace default DefaultNamespace
	Store            string // EnvStore, StoreDynamoDB or StoreRedis
	Table            string // EnvTable, required with StoreDynamoDB
	RedisURL         string // EnvRedisURL, required with StoreRedis
	Mode             string // EnvMode, ModeLease or ModeTransactional
	Key              string // EnvKey, "" when the Effect brings its own Key function
	BatchConcurrency int    // EnvBatchConcurrency
	// MaxReceiveCount is the queue's maxReceiveCount (EnvMaxReceiveCount),
	// 0 when not known: a copy that meets InProgress on its last receive
	// waits for the holder, or is requeued delayed when it cannot wait so
	// long, and a record done on its last receive is deleted at once,
	// instead of failing into the dead-letter queue
	// (sqsbatch.WithMaxReceiveCount, WithRequeue, WithDelete).
	MaxReceiveCount int
	// VisibilityTimeout is the queue's visibility timeout
	// (EnvVisibilityTimeout), 0 when not known: a record that failed on
	// the store stays hidden for up to 2^n visibility timeouts after its
	// n-th receive, so that a store slow or throttled for minutes delays
	// messages instead of dead-lettering them (sqsbatch.WithStoreBackoff).
	VisibilityTimeout time.Duration
	// UnknownOutcome is what lease mode does with an unknown outcome the
	// effect's Reconcile could not settle (EnvUnknownOutcome): UnknownRetry
	// or UnknownHold.
	UnknownOutcome string
	LogLevel       slog.Level // EnvLogLevel
	LogBodies      bool       // EnvLogBodies
}

// policy is the idem policy of c.UnknownOutcome (checkChoices has
// refused any other value).
func (c Config) policy() idem.UnknownPolicy {
	if c.UnknownOutcome == UnknownHold {
		return idem.Hold
	}
	return idem.Retry
}

// checkChoices records in e a Mode or UnknownOutcome that is none of the
// values Load accepts: New is given a Config by hand, and a misspelt
// "HOLD" run as retry would weaken at most once to at least once. Empty
// is the default, as an unset variable is to Load.
func (c *Config) checkChoices(e *Env) {
	c.Mode = cmp.Or(c.Mode, DefaultMode)
	c.UnknownOutcome = cmp.Or(c.UnknownOutcome, DefaultUnknownOutcome)
	if !slices.Contains(Modes(), c.Mode) {
		e.Fail(EnvMode, "%q is not one of %s", c.Mode, strings.Join(Modes(), ", "))
	}
	if !slices.Contains(UnknownOutcomes(), c.UnknownOutcome) {
		e.Fail(EnvUnknownOutcome, "%q is not one of %s", c.UnknownOutcome, strings.Join(UnknownOutcomes(), ", "))
	}
}

// Load reads the configuration with getenv (os.Getenv in a Lambda). The
// error is a *ConfigError naming every missing or wrong variable.
func Load(getenv func(string) string) (Config, error) {
	e := NewEnv(getenv)
	c := readConfig(e)
	return c, e.Err("consumer")
}

// readConfig reads the configuration with e, which collects the problems.
func readConfig(e *Env) Config {
	c := Config{
		GuardConfig:       ReadGuardConfig(e, DefaultNamespace),
		Store:             e.OneOf(EnvStore, DefaultStore, StoreDynamoDB, StoreRedis),
		Mode:              e.OneOf(EnvMode, DefaultMode, Modes()...),
		Key:               e.String(EnvKey, ""),
		BatchConcurrency:  e.Int(EnvBatchConcurrency, DefaultBatchConcurrency, 1),
		MaxReceiveCount:   e.Int(EnvMaxReceiveCount, 0, 0),
		VisibilityTimeout: e.Duration(EnvVisibilityTimeout, 0),
		UnknownOutcome:    e.OneOf(EnvUnknownOutcome, DefaultUnknownOutcome, UnknownOutcomes()...),
		LogLevel:          e.Level(EnvLogLevel, DefaultLogLevel),
		LogBodies:         e.Bool(EnvLogBodies),
	}
	if v := c.VisibilityTimeout; v != 0 && (v < time.Second || v > sqsbatch.MaxVisibilityTimeout) {
		e.Fail(EnvVisibilityTimeout, "%s is not a visibility timeout SQS allows (1s to %s)", v, sqsbatch.MaxVisibilityTimeout)
		c.VisibilityTimeout = 0
	}
	// Both are read whatever the store, so that a variable set for the
	// other store is not reported as unread.
	c.Table, c.RedisURL = e.String(EnvTable, ""), e.String(EnvRedisURL, "")
	switch c.Store {
	case StoreDynamoDB:
		if c.Table == "" {
			e.Fail(EnvTable, "required with %s=%s", EnvStore, StoreDynamoDB)
		}
	case StoreRedis:
		if _, err := redis.ParseURL(c.RedisURL); err != nil {
			e.Fail(EnvRedisURL, "required with %s=%s, a redis:// or rediss:// URL: %v", EnvStore, StoreRedis, err)
		}
		if c.Mode == ModeTransactional {
			e.Fail(EnvMode, "%s needs %s=%s: Redis cannot commit DynamoDB writes with a receipt", ModeTransactional, EnvStore, StoreDynamoDB)
		}
	}
	return c
}
