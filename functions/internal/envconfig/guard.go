package envconfig

import (
	"log/slog"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// Guard is the configuration both functions share: their idem Guard's
// settings and the log level.
type Guard struct {
	IdemTable    string        // IDEM_TABLE, required
	Namespace    string        // IDEM_NAMESPACE, default the function's own
	Retention    time.Duration // IDEM_RETENTION, default 168h
	SafetyMargin time.Duration // IDEM_SAFETY_MARGIN, default 2s
	Lease        time.Duration // IDEM_LEASE, 0: the remaining Lambda time
	CacheSize    int           // IDEM_CACHE_SIZE, default 1000, 0: off
	LogLevel     slog.Level    // LOG_LEVEL, default INFO
}

// LoadGuard reads the Guard settings with r. namespace is the default of
// IDEM_NAMESPACE; work is what a lease must leave time for after the safety
// margin, named in the IDEM_LEASE problem ("effect", "send").
func LoadGuard(r *Reader, namespace, work string) Guard {
	g := Guard{
		IdemTable:    r.Required("IDEM_TABLE"),
		Namespace:    r.String("IDEM_NAMESPACE", namespace),
		Retention:    r.Duration("IDEM_RETENTION", idem.DefaultRetention),
		SafetyMargin: r.Duration("IDEM_SAFETY_MARGIN", idem.DefaultSafetyMargin),
		Lease:        r.Duration("IDEM_LEASE", 0),
		CacheSize:    r.Int("IDEM_CACHE_SIZE", 1000, 0),
		LogLevel:     r.Level("LOG_LEVEL"),
	}
	if g.Lease != 0 && g.Lease <= g.SafetyMargin {
		r.Fail("IDEM_LEASE", "%s leaves no time for the %s after the %s safety margin", g.Lease, work, g.SafetyMargin)
	}
	return g
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
