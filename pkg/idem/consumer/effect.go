package consumer

import (
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// Effect is what a team writes: the business effect of one record, run at
// most once per key, in the mode the configuration names (IDEM_MODE). An
// effect may implement both modes; the one IDEM_MODE names must be set.
type Effect struct {
	// Key derives a record's idempotency key. nil: KeyField(IDEM_KEY),
	// which must then be set (the construct sets it from its Config.Key).
	Key sqsbatch.KeyFunc
	// Lease is the effect in lease mode: any side effect. Its context ends
	// a safety margin before the lease; pass the key downstream (an
	// Idempotency-Key header) so a remote system can deduplicate too.
	Lease sqsbatch.Func
	// Reconcile, in lease mode, asks the remote system whether the effect
	// of a key already took place, before a record that takes over an
	// unknown outcome runs Lease again: an earlier attempt's lease ran
	// out, or its Lease returned an error not marked idem.Definite. nil:
	// IDEM_UNKNOWN_OUTCOME decides (retry or hold).
	Reconcile sqsbatch.ReconcileFunc
	// Tx is the effect in transactional mode: DynamoDB writes, returned
	// (never made) and committed with the receipt in one transaction. It
	// runs for duplicates too, so it must have no side effect of its own.
	Tx sqsbatch.TxFunc
}

// Modes lists the modes eff implements.
func (eff Effect) Modes() []string {
	var modes []string
	if eff.Lease != nil {
		modes = append(modes, ModeLease)
	}
	if eff.Tx != nil {
		modes = append(modes, ModeTransactional)
	}
	return modes
}

// check records in e what of cfg eff does not fit: a mode it
// does not implement, or no key.
func (eff Effect) check(cfg Config, e *Env) {
	switch {
	case cfg.Mode == ModeLease && eff.Lease == nil:
		e.Fail(EnvMode, "%s, but the effect has no Lease function (it implements %v)", ModeLease, eff.Modes())
	case cfg.Mode == ModeTransactional && eff.Tx == nil:
		e.Fail(EnvMode, "%s, but the effect has no Tx function (it implements %v)", ModeTransactional, eff.Modes())
	}
	if eff.Key == nil && cfg.Key == "" {
		e.Fail(EnvKey, "required: the effect has no Key function of its own")
	}
}

// key is the key function in force.
func (eff Effect) key(cfg Config) sqsbatch.KeyFunc {
	if eff.Key != nil {
		return eff.Key
	}
	return KeyField(cfg.Key)
}

// ErrKeyConflict: a record's key attribute and its body's key field are
// both set and differ. The record is rejected and ends in the dead-letter
// queue: its producer is broken.
var ErrKeyConflict = errors.New("consumer: the key attribute and the body's key field differ")

// KeyField keys records by the message attribute name, else by the body's
// top-level JSON field name (a string or a number), as the template's
// producer sends them. A record with both must carry the same key in both;
// a record with neither, or a body that is not JSON and no attribute, is
// rejected.
func KeyField(name string) sqsbatch.KeyFunc {
	attribute, field := sqsbatch.Attribute(name), sqsbatch.JSONField(name)
	return func(msg events.SQSMessage) (string, error) {
		key, aerr := attribute(msg)
		inBody, ferr := field(msg)
		switch {
		case aerr == nil && ferr == nil && key != inBody:
			// Neither key goes into the error: it is logged.
			return "", fmt.Errorf("%w (%q)", ErrKeyConflict, name)
		case aerr == nil:
			return key, nil
		case ferr == nil:
			return inBody, nil
		}
		return "", errors.Join(aerr, ferr)
	}
}
