package sqsbatch

import (
	"context"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// ReconcileFunc asks the remote system whether the effect of key (whose
// message is msg) already took place, as idem.ReconcileFunc does: applied
// with the result to keep, not applied, or an error when it cannot tell.
// It runs only when a record takes over an unknown outcome (lease mode).
type ReconcileFunc func(ctx context.Context, key string, msg events.SQSMessage) (applied bool, result []byte, err error)

// WithReconcile sets how a record that takes over an unknown outcome — an
// earlier attempt's lease ran out, or its effect failed without saying
// the failure was definite (idem.Definite) — asks the remote system
// whether the effect took place, before running it (idem.Reconcile).
// Lease mode only. Default none: the Guard's policy decides
// (idem.WithUnknownOutcome).
func WithReconcile(fn ReconcileFunc) Option {
	return func(o *options) error {
		if fn == nil {
			return fmt.Errorf("%w: nil reconcile", idem.ErrInvalid)
		}
		o.reconcile = fn
		return nil
	}
}

// reconcileFor is the Guard's call option reconciling key's record, none
// without WithReconcile.
func (h *Handler) reconcileFor(key string, msg events.SQSMessage) []idem.CallOption {
	if h.opts.reconcile == nil {
		return nil
	}
	return []idem.CallOption{idem.Reconcile(func(ctx context.Context) (bool, []byte, error) {
		return h.opts.reconcile(ctx, key, msg)
	})}
}
