package dynamostore

import (
	"fmt"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// WithBackoff sets the wait before each retry of a transient error (retry
// is 0 for the first): a function that must be safe for concurrent use.
// The default is capped exponential backoff with full jitter, 25 ms
// doubling to 400 ms, so that a receipt has many tries within a few
// seconds of safety margin; a deterministic simulation passes its own.
func WithBackoff(fn func(retry int) time.Duration) Option {
	return func(s *Store) error {
		if fn == nil {
			return fmt.Errorf("%w: dynamostore: nil backoff", idem.ErrInvalid)
		}
		s.backoff = fn
		return nil
	}
}
