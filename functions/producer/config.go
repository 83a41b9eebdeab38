package main

import "github.com/exactlyonce/sqsidem/functions/internal/envconfig"

// Config is the producer's configuration, read from the environment.
type Config struct {
	envconfig.Guard        // IDEM_*, LOG_LEVEL; IDEM_NAMESPACE default "producer"
	QueueURL        string // QUEUE_URL, required
	Concurrency     int    // PRODUCER_CONCURRENCY, orders guarded at once, default 50
	SendAttempts    int    // SEND_ATTEMPTS, tries per message, default 3
	Faults          Faults // FAULT_*, see faults.go
}

// LoadConfig reads the configuration with getenv (os.Getenv in main). The
// error is an *envconfig.Error naming every missing or wrong variable.
func LoadConfig(getenv func(string) string) (Config, error) {
	e := envconfig.NewReader(getenv)
	c := Config{
		Guard:        envconfig.LoadGuard(e, "producer", "send"),
		QueueURL:     e.Required("QUEUE_URL"),
		Concurrency:  e.Int("PRODUCER_CONCURRENCY", 50, 1),
		SendAttempts: e.Int("SEND_ATTEMPTS", 3, 1),
		Faults:       loadFaults(e),
	}
	if c.QueueURL != "" {
		c.QueueURL = e.HTTPURL("QUEUE_URL")
	}
	return c, e.Err("producer")
}
