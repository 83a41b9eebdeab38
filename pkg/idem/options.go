package idem

import (
	"fmt"
	"time"
)

// Defaults. Each can be changed with an Option.
const (
	// DefaultRetention is how long a receipt is kept (and duplicates caught).
	DefaultRetention = 7 * 24 * time.Hour
	// DefaultSafetyMargin is the time between the end of the effect's context
	// and the end of the lease: the time left to write the receipt, and the
	// allowance for clock skew between the writer of leaseUntil and the
	// machine that compares it.
	DefaultSafetyMargin = 2 * time.Second
	// DefaultLease is used when ctx has no deadline and WithLease is not set.
	DefaultLease = 5 * time.Minute
	// DefaultMaxResultSize caps the stored result, or the store's own limit
	// (Capabilities.MaxResultSize) when that is lower. A larger result is
	// not stored but the receipt still is.
	DefaultMaxResultSize = 300 << 10
	// MaxKeyLen is the longest key accepted, in bytes.
	MaxKeyLen = 1024
	// MaxStorageKeyLen is the longest storage key a Guard makes: a
	// namespace, the separator and a plain key (WithPlainKeys). Hashed keys
	// are 64 bytes after the separator.
	MaxStorageKeyLen = MaxNamespaceLen + len(KeySeparator) + MaxKeyLen
	// MaxNamespaceLen is the longest namespace accepted, in bytes.
	MaxNamespaceLen = 128
	// MaxLastErrorLen caps the error text kept on a FAILED record, in bytes.
	MaxLastErrorLen = 1024
	// KeySeparator separates the namespace from the key in storage keys; a
	// namespace cannot contain it.
	KeySeparator = "#"
)

// Option configures a Guard.
type Option func(*options) error

type options struct {
	lease     time.Duration // 0: the remaining time of ctx
	margin    time.Duration
	retention time.Duration
	maxResult int // -1: the default
	cacheSize int
	observer  Observer
	now       func() time.Time
	plainKeys bool
	errorText func(error) string
	unknown   UnknownPolicy
}

func defaultOptions() options {
	return options{
		margin:    DefaultSafetyMargin,
		retention: DefaultRetention,
		maxResult: -1,
		now:       time.Now,
		errorText: ErrorClass,
	}
}

// check validates the options against each other and the store, after all
// of them are applied, so that their order does not matter.
func (o *options) check(caps Capabilities) error {
	if o.lease != 0 && o.lease <= o.margin {
		return fmt.Errorf("%w: lease %s is not longer than the %s safety margin: no time would be left for the effect", ErrInvalid, o.lease, o.margin)
	}
	if caps.MaxKeySize <= 0 || caps.MaxResultSize < 0 {
		return fmt.Errorf("%w: the store declares no usable limits (%+v)", ErrInvalid, caps)
	}
	if o.maxResult > caps.MaxResultSize {
		return fmt.Errorf("%w: max result size %d is more than the store keeps (%d bytes)", ErrInvalid, o.maxResult, caps.MaxResultSize)
	}
	if o.maxResult < 0 {
		o.maxResult = min(DefaultMaxResultSize, caps.MaxResultSize)
	}
	return nil
}

// WithLease sets the lease explicitly. By default the lease is the time left
// before ctx's deadline (the Lambda deadline), or DefaultLease without one.
// It must be longer than the safety margin.
func WithLease(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("%w: lease %s is not positive", ErrInvalid, d)
		}
		o.lease = d
		return nil
	}
}

// WithSafetyMargin sets how long before the lease ends the effect's context
// is cancelled: the time the receipt has to be written. Default
// DefaultSafetyMargin.
func WithSafetyMargin(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("%w: safety margin %s is not positive", ErrInvalid, d)
		}
		o.margin = d
		return nil
	}
}

// WithRetention sets how long receipts are kept. Default DefaultRetention.
// A copy of a message delivered later than this runs the effect again.
func WithRetention(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("%w: retention %s is not positive", ErrInvalid, d)
		}
		o.retention = d
		return nil
	}
}

// WithMaxResultSize caps the size of a stored result in bytes. A larger
// result is not stored; the receipt is, and duplicates learn the result was
// omitted. Zero stores no results at all. It cannot exceed the store's
// Capabilities.MaxResultSize (New returns ErrInvalid).
func WithMaxResultSize(n int) Option {
	return func(o *options) error {
		if n < 0 {
			return fmt.Errorf("%w: max result size %d is negative", ErrInvalid, n)
		}
		o.maxResult = n
		return nil
	}
}

// WithCache keeps up to n completed keys in process memory, so a repeated
// duplicate is answered without a store request. Entries are dropped when
// their receipt expires. Off by default.
func WithCache(n int) Option {
	return func(o *options) error {
		if n <= 0 {
			return fmt.Errorf("%w: cache size %d is not positive", ErrInvalid, n)
		}
		o.cacheSize = n
		return nil
	}
}

// WithObserver calls fn after every Do and DoTx with the outcome.
func WithObserver(fn Observer) Option {
	return func(o *options) error {
		if fn == nil {
			return fmt.Errorf("%w: nil observer", ErrInvalid)
		}
		o.observer = fn
		return nil
	}
}

// WithClock replaces time.Now, for tests.
func WithClock(now func() time.Time) Option {
	return func(o *options) error {
		if now == nil {
			return fmt.Errorf("%w: nil clock", ErrInvalid)
		}
		o.now = now
		return nil
	}
}

// WithPlainKeys stores keys as namespace#key instead of namespace#sha256(key).
// Only for keys that are not personal data: readable records, but business
// identifiers at rest.
func WithPlainKeys() Option {
	return func(o *options) error {
		o.plainKeys = true
		return nil
	}
}

// WithErrorText sets what a FAILED record keeps of the effect's error as its
// last error (cut to MaxLastErrorLen bytes). The default, ErrorClass, keeps
// only the error's type, because an error's text often carries business
// identifiers and the table must not. Pass a function that redacts, or
// (error).Error when your errors carry nothing personal.
func WithErrorText(fn func(error) string) Option {
	return func(o *options) error {
		if fn == nil {
			return fmt.Errorf("%w: nil error text function", ErrInvalid)
		}
		o.errorText = fn
		return nil
	}
}
