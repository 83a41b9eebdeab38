package main

import (
	"strings"

	"github.com/exactlyonce/sqsidem/functions/internal/envconfig"
)

// Mode selects how the effect is guarded.
type Mode string

const (
	// ModeLease runs any effect under a lease (the documented window: a
	// crash after the effect and before the receipt can repeat it).
	ModeLease Mode = "lease"
	// ModeTransactional commits the ledger update with the receipt in one
	// DynamoDB transaction: exactly once, but DynamoDB effects only.
	ModeTransactional Mode = "transactional"
)

// Config is the consumer's configuration, read from the environment.
type Config struct {
	envconfig.Guard        // IDEM_*, LOG_LEVEL; IDEM_NAMESPACE default "consumer"
	LedgerTable     string // LEDGER_TABLE, required
	Mode            Mode   // IDEM_MODE, lease|transactional, default lease
	Concurrency     int    // BATCH_CONCURRENCY, default 10
	EffectURL       string // EFFECT_URL, optional absolute http(s) URL
	LogBodies       bool   // LOG_BODIES, default false
	Faults          Faults // FAULT_*, see faults.go
}

// LoadConfig reads the configuration with getenv (os.Getenv in main). The
// error is an *envconfig.Error naming every missing or wrong variable.
func LoadConfig(getenv func(string) string) (Config, error) {
	e := envconfig.NewReader(getenv)
	c := Config{
		Guard:       envconfig.LoadGuard(e, "consumer", "effect"),
		LedgerTable: e.Required("LEDGER_TABLE"),
		Mode:        Mode(strings.ToLower(e.String("IDEM_MODE", string(ModeLease)))),
		Concurrency: e.Int("BATCH_CONCURRENCY", 10, 1),
		EffectURL:   e.HTTPURL("EFFECT_URL"),
		LogBodies:   e.Bool("LOG_BODIES"),
		Faults:      loadFaults(e),
	}
	if c.Mode != ModeLease && c.Mode != ModeTransactional {
		e.Fail("IDEM_MODE", "%q is neither %q nor %q", c.Mode, ModeLease, ModeTransactional)
	}
	if c.Mode == ModeTransactional && c.EffectURL != "" {
		e.Fail("EFFECT_URL", "set, but IDEM_MODE=transactional only commits DynamoDB writes and would never call it")
	}
	return c, e.Err("consumer")
}
