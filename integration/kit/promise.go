package kit

import (
	"fmt"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// promise is the deployed consumer's configuration as its runtime states
// it at init (the line consumer.LogReady), and the guarantee that
// configuration makes: what every scenario checks, so that a consumer
// that keeps its promise passes whichever it chose, and one that breaks
// it fails with a message naming it.
type promise struct {
	mode, unknown string // IDEM_MODE, IDEM_UNKNOWN_OUTCOME
	reconcile     bool   // the effect has a Reconcile (lease mode)
	guarantee     string // consumer.Guarantee of the three
	store         string // IDEM_STORE
}

func newPromise(mode, unknown string, reconcile bool) promise {
	return promise{mode: mode, unknown: unknown, reconcile: reconcile,
		guarantee: consumer.Guarantee(mode, unknown, reconcile), store: consumer.DefaultStore}
}

// String names the guarantee and what makes it, as the kit's messages
// say it: "at-most-once (hold, no reconcile)".
func (p promise) String() string {
	switch {
	case p.mode == consumer.ModeTransactional:
		return p.guarantee + " (transactional)"
	case p.reconcile:
		return fmt.Sprintf("%s (lease, reconcile; what it cannot tell: %s)", p.guarantee, p.unknown)
	}
	return fmt.Sprintf("%s (%s, no reconcile)", p.guarantee, p.unknown)
}

// lease reports whether the consumer runs in lease mode, where an
// attempt can leave an unknown outcome (a crash, an error not marked
// definite) for the next one.
func (p promise) lease() bool { return p.mode == consumer.ModeLease }

// mayRerun reports whether the configuration ever runs an effect again
// after an unknown outcome (outcome and metric Rerun): retry, without a
// Reconcile or when it cannot tell.
func (p promise) mayRerun() bool { return p.lease() && p.unknown == consumer.UnknownRetry }

// mayHold reports whether it ever holds a key (outcome and metric Held):
// hold, without a Reconcile or when it cannot tell.
func (p promise) mayHold() bool { return p.lease() && p.unknown == consumer.UnknownHold }

// keyFate is what one key of a scenario came to, once the queue drained.
type keyFate struct {
	applied int  // the probe's count
	reruns  int  // "rerun" lines logged for its storage key
	held    bool // its receipt is HELD
	dead    int  // its messages in the dead-letter queue
}

// intent is what a scenario makes of a key, whatever the guarantee.
type intent int

const (
	// toApply: valid messages; the effect can take place.
	toApply intent = iota
	// toRefuse: the effect refuses it every time (malformed, poison, a
	// partner that always says no): never applied, in the dead-letter
	// queue.
	toRefuse
)

// judge checks a key's fate against the promise: nil when it is kept.
// settle reports a key the promise parked for an operator (at most once:
// held, not applied or applied once), whom the kit then plays. A
// reconciling consumer whose Reconcile could not tell falls back on its
// policy, so a key it re-ran or held is judged by the policy's guarantee
// (lenient = false says the remote always answers, as the kit's stub
// does: then that fallback is itself a broken promise).
func (p promise) judge(key string, f keyFate, in intent, lenient bool) (settle bool, err error) {
	if in == toRefuse {
		switch {
		case f.applied != 0:
			return false, fmt.Errorf("%s: key %s applied %d times, want never (the effect refuses it)", p, key, f.applied)
		case f.dead == 0 && !f.held:
			return false, fmt.Errorf("%s: key %s not in the dead-letter queue (the effect refuses it every time)", p, key)
		}
		return false, nil
	}
	g := p.guarantee
	if p.guarantee == consumer.GuaranteeExactlyOnce && p.reconcile && (f.reruns > 0 || f.held) {
		if !lenient {
			what := "re-run"
			if f.held {
				what = "held"
			}
			return false, fmt.Errorf("%s: key %s %s after an unknown outcome: its Reconcile did not tell, though the partner answers every lookup", p, key, what)
		}
		g = consumer.Guarantee(p.mode, p.unknown, false) // the policy's
	}
	switch g {
	case consumer.GuaranteeExactlyOnce:
		switch {
		case f.applied != 1:
			return false, fmt.Errorf("%s: key %s applied %d times, want 1", p, key, f.applied)
		case f.reruns > 0:
			return false, fmt.Errorf("%s: key %s re-run after an unknown outcome (%d rerun lines): this configuration never runs an effect again", p, key, f.reruns)
		case f.held:
			return false, fmt.Errorf("%s: key %s held: this configuration never holds a key", p, key)
		case f.dead > 0:
			return false, fmt.Errorf("%s: key %s applied, but %d of its messages in the dead-letter queue", p, key, f.dead)
		}
	case consumer.GuaranteeAtLeastOnce:
		switch {
		case f.applied == 0:
			return false, fmt.Errorf("%s: key %s never applied", p, key)
		case f.applied > 2:
			return false, fmt.Errorf("%s: key %s applied %d times, want at most 2 (the second after an unknown outcome)", p, key, f.applied)
		case f.applied == 2 && f.reruns == 0:
			return false, fmt.Errorf("%s: key %s applied 2 times without a re-run counted for it (no \"rerun\" line with its storage key)", p, key)
		case f.dead > 0 || f.held:
			return false, fmt.Errorf("%s: key %s dead-lettered (%d messages, held %t): this configuration never dead-letters an unknown outcome", p, key, f.dead, f.held)
		}
	case consumer.GuaranteeAtMostOnce:
		switch {
		case f.applied > 1:
			return false, fmt.Errorf("%s: key %s applied %d times", p, key, f.applied)
		case f.reruns > 0:
			return false, fmt.Errorf("%s: key %s re-run after an unknown outcome (%d rerun lines): this configuration holds, never re-runs", p, key, f.reruns)
		case f.held && f.dead == 0:
			return false, fmt.Errorf("%s: key %s held, but none of its messages in the dead-letter queue", p, key)
		case f.held:
			return true, nil
		case f.applied == 0:
			return false, fmt.Errorf("%s: key %s neither applied nor held", p, key)
		case f.dead > 0:
			return false, fmt.Errorf("%s: key %s applied and not held, but %d of its messages in the dead-letter queue", p, key, f.dead)
		}
	}
	return false, nil
}

// settled checks a key the operator settled and whose messages went back
// to the queue: applied exactly once, whatever was decided.
func (p promise) settled(key string, applied int, decision string) error {
	if applied != 1 {
		return fmt.Errorf("%s: key %s applied %d times once settled (%s) and redriven, want 1", p, key, applied, decision)
	}
	return nil
}
