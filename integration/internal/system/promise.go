package system

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// The guarantee a consumer promises is the one it logs at init
// (consumer.LogReady: its mode, its unknown-outcome policy, whether its
// effect reconciles), not what the template or a test author expects: a
// fork that chose hold, or retry without a Reconcile, is held to its own
// promise, and fails only when it breaks it.

// String names the promise and the configuration that makes it, e.g.
// "at-most-once (lease mode, hold, no reconcile)".
func (p Ready) String() string {
	if p.Mode == consumer.ModeTransactional {
		return fmt.Sprintf("%s (%s mode)", p.Guarantee, p.Mode)
	}
	reconcile := "no reconcile"
	if p.Reconcile {
		reconcile = "reconcile"
	}
	return fmt.Sprintf("%s (%s mode, %s, %s)", p.Guarantee, p.Mode, p.UnknownOutcome, reconcile)
}

// Is reports whether the promise is guarantee (consumer.Guarantee*).
func (p Ready) Is(guarantee string) bool { return p.Guarantee == guarantee }

// readyWait bounds the wait for the consumers' init lines: they are
// written before an instance asks for its first invocation (which Start
// waits for), and reach Records through the harness's pipe.
const readyWait = 30 * time.Second

// awaitPromise waits until instances consumer instances have logged their
// init line, and returns what they promise; an error if they disagree
// (their mode, policy or reconcile), or if it is not the promise their
// configuration makes (consumer.Guarantee).
func (s *System) awaitPromise(ctx context.Context, instances int) (Ready, error) {
	ctx, cancel := context.WithTimeout(ctx, readyWait)
	defer cancel()
	for {
		ready := s.Records.Ready()
		if len(ready) >= instances {
			return agreed(ready)
		}
		select {
		case <-ctx.Done():
			return Ready{}, fmt.Errorf("system: %d of %d consumer instances logged %q at init: %w", len(ready), instances, consumer.LogReady, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// agreed is the promise of ready, the init lines of instances of one
// consumer, which must agree.
func agreed(ready []Ready) (Ready, error) {
	p := ready[0]
	for _, r := range ready[1:] {
		if r.Mode != p.Mode || r.UnknownOutcome != p.UnknownOutcome || r.Reconcile != p.Reconcile || r.Guarantee != p.Guarantee {
			return Ready{}, fmt.Errorf("system: the consumer's instances disagree on what they promise: %s and %s", p, r)
		}
	}
	if want := consumer.Guarantee(p.Mode, p.UnknownOutcome, p.Reconcile); p.Guarantee != want {
		return Ready{}, fmt.Errorf("system: the consumer promises %s, but its configuration makes %s", p, want)
	}
	return p, nil
}

// Reruns is how many records of key the consumers logged with outcome
// rerun (an effect run again after an unknown outcome no reconcile
// settled, its receipt written), and how many were logged by an attempt
// after the first that may have run the effect and ended without its
// receipt (unconfirmed, lease_lost, failed: a run again whose own outcome
// is unknown, which the runtime counts as that outcome, not as a rerun);
// the zombie's and other extra instances writing to Records included.
func (s *System) Reruns(key string) (reruns, retaken int) {
	for _, l := range s.Records.OfKey(s.StorageKey(key)) {
		switch {
		case l.Outcome == "rerun":
			reruns++
		case l.Attempts >= 2 && (l.Outcome == "unconfirmed" || l.Outcome == "lease_lost" || l.Outcome == "failed"):
			retaken++
		}
	}
	return reruns, retaken
}

// Broken returns an error naming the guarantee the consumer broke, and
// the keys that show it, nil when every key was applied as often as its
// promise allows:
//
//   - exactly-once: never twice;
//   - at-most-once (hold, no reconcile): never twice, and never run again
//     after an unknown outcome (no rerun);
//   - at-least-once (retry, no reconcile): never three times, twice only
//     with a rerun counted for the key — or, on a loaded machine, an
//     attempt after the first that ran it again and then could not write
//     its receipt either (Report.Retaken) — and never dead-lettered for an
//     unknown outcome (held).
//
// That every key was applied, or is in the DLQ with a reason, is Lost's;
// what a scenario expects of its faults (held, applied once after an
// operator settled it, twice after a crash after the effect) is the
// scenario's.
func (r Report) Broken() error {
	var errs []error
	p := r.Promise
	broke := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", p, fmt.Sprintf(format, args...)))
	}
	for _, k := range slices.Sorted(maps.Keys(r.Times)) {
		n, reruns := r.Times[k], r.Reruns[k]
		switch {
		case p.Is(consumer.GuaranteeAtLeastOnce) && n > 2:
			broke("key %s applied %d times, never more than twice", k, n)
		case p.Is(consumer.GuaranteeAtLeastOnce) && n == 2 && reruns == 0 && r.Retaken[k] == 0:
			broke("key %s applied 2 times and no rerun was counted for it (nor did a later attempt end without its receipt)", k)
		case !p.Is(consumer.GuaranteeAtLeastOnce) && n > 1:
			broke("key %s applied %d times", k, n)
		}
		if p.Is(consumer.GuaranteeAtMostOnce) && reruns > 0 {
			broke("key %s was run again after an unknown outcome (%d reruns)", k, reruns)
		}
	}
	if p.Is(consumer.GuaranteeAtLeastOnce) {
		for _, d := range r.DeadLetters {
			if strings.Contains(d.Reason, idem.ErrHeld.Error()) {
				broke("key %q dead-lettered for an unknown outcome: %s", d.Key, d.Reason)
			}
		}
	}
	if r.Promise.Guarantee == "" {
		errs = append(errs, errors.New("system: the report has no promise (the consumer's init line was not read)"))
	}
	return errors.Join(errs...)
}
