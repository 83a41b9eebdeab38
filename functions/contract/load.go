package contract

import (
	"log/slog"
	"time"

	"github.com/exactlyonce/sqsidem/functions/internal/envconfig"
	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// anHTTPURL is what IsHTTPURL accepts, as a problem names it.
const anHTTPURL = "an absolute http(s) URL"

// Guard is the configuration both functions share: their idem Guard's
// settings and the log level.
type Guard struct {
	IdemTable    string        // EnvIdemTable, required
	Namespace    string        // EnvNamespace, default the function's own namespace
	Retention    time.Duration // EnvRetention, default DefaultRetention
	SafetyMargin time.Duration // EnvSafetyMargin, default DefaultSafetyMargin
	Lease        time.Duration // EnvLease, 0: the remaining Lambda time
	CacheSize    int           // EnvCacheSize, default DefaultCacheSize, 0: off
	LogLevel     slog.Level    // EnvLogLevel, default DefaultLogLevel
}

// Options are the idem options the settings imply.
func (g Guard) Options() []idem.Option {
	opts := []idem.Option{idem.WithRetention(g.Retention), idem.WithSafetyMargin(g.SafetyMargin)}
	if g.Lease > 0 {
		opts = append(opts, idem.WithLease(g.Lease))
	}
	if g.CacheSize > 0 {
		opts = append(opts, idem.WithCache(g.CacheSize))
	}
	return opts
}

// loadGuard reads the Guard settings. namespace is the default of
// EnvNamespace; work is what a lease must leave time for after the safety
// margin, named in the EnvLease problem ("effect", "send").
func loadGuard(e *envconfig.Reader, namespace, work string) Guard {
	g := Guard{
		IdemTable:    e.Required(EnvIdemTable),
		Namespace:    e.String(EnvNamespace, namespace),
		Retention:    e.Duration(EnvRetention, DefaultRetention),
		SafetyMargin: e.Duration(EnvSafetyMargin, DefaultSafetyMargin),
		Lease:        e.Duration(EnvLease, 0),
		CacheSize:    e.Int(EnvCacheSize, DefaultCacheSize, 0),
		LogLevel:     e.Level(EnvLogLevel, DefaultLogLevel),
	}
	if g.Lease != 0 && g.Lease <= g.SafetyMargin {
		e.Fail(EnvLease, "%s leaves no time for the %s after the %s safety margin", g.Lease, work, g.SafetyMargin)
	}
	return g
}

// Consumer is the consumer's configuration.
type Consumer struct {
	Guard              // namespace default ConsumerNamespace
	LedgerTable string // EnvLedgerTable, required
	Mode        string // EnvMode, ModeLease or ModeTransactional, default DefaultMode
	Concurrency int    // EnvBatchConcurrency, default DefaultBatchConcurrency
	EffectURL   string // EnvEffectURL, optional, IsHTTPURL
	LogBodies   bool   // EnvLogBodies, default false
}

// LoadConsumer reads the consumer's configuration with getenv (os.Getenv in
// main). The error is an *envconfig.Error naming every missing or wrong
// variable.
func LoadConsumer(getenv func(string) string) (Consumer, error) {
	e := envconfig.NewReader(getenv)
	c := Consumer{
		Guard:       loadGuard(e, ConsumerNamespace, "effect"),
		LedgerTable: e.Required(EnvLedgerTable),
		Mode:        e.String(EnvMode, DefaultMode),
		Concurrency: e.Int(EnvBatchConcurrency, DefaultBatchConcurrency, 1),
		EffectURL:   e.Valid(EnvEffectURL, IsHTTPURL, anHTTPURL),
		LogBodies:   e.Bool(EnvLogBodies),
	}
	if !ValidMode(c.Mode) {
		e.Fail(EnvMode, "%q is neither %q nor %q", c.Mode, ModeLease, ModeTransactional)
	}
	if c.Mode == ModeTransactional && c.EffectURL != "" {
		e.Fail(EnvEffectURL, "set, but %s=%s only commits DynamoDB writes and would never call it", EnvMode, ModeTransactional)
	}
	return c, e.Err("consumer")
}

// Producer is the producer's configuration.
type Producer struct {
	Guard               // namespace default ProducerNamespace
	QueueURL     string // EnvQueueURL, required, IsHTTPURL
	Concurrency  int    // EnvProducerConcurrency, orders guarded at once, default DefaultProducerConcurrency
	SendAttempts int    // EnvSendAttempts, tries per message, default DefaultSendAttempts
}

// LoadProducer reads the producer's configuration with getenv (os.Getenv in
// main). The error is an *envconfig.Error naming every missing or wrong
// variable.
func LoadProducer(getenv func(string) string) (Producer, error) {
	e := envconfig.NewReader(getenv)
	p := Producer{
		Guard:        loadGuard(e, ProducerNamespace, "send"),
		QueueURL:     e.Required(EnvQueueURL),
		Concurrency:  e.Int(EnvProducerConcurrency, DefaultProducerConcurrency, 1),
		SendAttempts: e.Int(EnvSendAttempts, DefaultSendAttempts, 1),
	}
	if p.QueueURL != "" {
		e.Valid(EnvQueueURL, IsHTTPURL, anHTTPURL)
	}
	return p, e.Err("producer")
}
