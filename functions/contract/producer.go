package contract

import (
	"log/slog"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// The producer's variables, besides the Guard's (consumer.ReadGuardConfig).
const (
	EnvQueueURL            = "QUEUE_URL"            // queue to send to; required, an absolute http(s) URL
	EnvProducerConcurrency = "PRODUCER_CONCURRENCY" // messages guarded at once; default DefaultProducerConcurrency
	EnvSendAttempts        = "SEND_ATTEMPTS"        // tries per message; default DefaultSendAttempts
)

// The producer's fault switches, honoured only by a build with the tag
// sqsidem_faults (the integration suite's).
const (
	EnvFaultFailSend           = "FAULT_FAIL_SEND"             // every SendMessageBatch call fails
	EnvFaultFailSendKeys       = "FAULT_FAIL_SEND_KEYS"        // these keys' entries fail, not the sender's fault
	EnvFaultFailPostSendUpdate = "FAULT_FAIL_POST_SEND_UPDATE" // the receipt after a send is not written
)

// OutputProducerFunctionName is the stack output naming the producer.
const OutputProducerFunctionName = "ProducerFunctionName"

// ProducerNamespace is the producer's idem namespace. It must differ from
// the consumer's: both keep their receipts in one table under the same
// keys, so with one namespace every delivery would find the producer's
// receipt and be skipped as a duplicate.
const ProducerNamespace = "producer"

// The producer's defaults.
const (
	DefaultProducerConcurrency = 50
	DefaultSendAttempts        = 3
)

// ProducerConfig is the producer's configuration. It lives here rather
// than in the producer (a main package) so that the stack's tests can load
// it from the synthesized environment (infra/envcontract_test.go).
type ProducerConfig struct {
	consumer.GuardConfig        // namespace default ProducerNamespace
	Table                string // consumer.EnvTable, required: the consumer's receipt table
	QueueURL             string // EnvQueueURL, required
	Concurrency          int    // EnvProducerConcurrency
	SendAttempts         int    // EnvSendAttempts
	LogLevel             slog.Level
}

// LoadProducer reads the producer's configuration with getenv (os.Getenv
// in main). The error is a *consumer.ConfigError naming every missing or
// wrong variable.
func LoadProducer(getenv func(string) string) (ProducerConfig, error) {
	e := consumer.NewEnv(getenv)
	p := ProducerConfig{
		GuardConfig:  consumer.ReadGuardConfig(e, ProducerNamespace),
		Table:        e.Required(consumer.EnvTable),
		QueueURL:     e.HTTPURL(EnvQueueURL),
		Concurrency:  e.Int(EnvProducerConcurrency, DefaultProducerConcurrency, 1),
		SendAttempts: e.Int(EnvSendAttempts, DefaultSendAttempts, 1),
		LogLevel:     e.Level(consumer.EnvLogLevel, consumer.DefaultLogLevel),
	}
	if p.QueueURL == "" {
		e.Fail(EnvQueueURL, "required")
	}
	return p, e.Err("producer")
}
