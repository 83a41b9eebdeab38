package kit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// Under hold without a Reconcile (at most once) a key whose outcome is
// unknown is parked: its receipt HELD (what idemctl list --status held
// lists), its messages in the dead-letter queue. The promise is kept only
// if an operator can then settle it, so the kit plays the operator, as
// the runbook says: it checks downstream (the application's probe: the
// effect took place, or not), writes that into the receipt (idemctl
// resolve --done / --not-done: dynamostore's Resolve, fenced by the
// record as read), sends the key's messages back to the queue (idemctl
// redrive), and checks the key then applied exactly once.

// heldKey is a key the promise parked, for the operator.
type heldKey struct {
	scenario string
	key      keyed
	decision string // "done" or "not-done", once settled
}

// hold keeps a held key for settleHeld; its messages in the dead-letter
// queue are expected there until then.
func (r *run) hold(scenario string, k keyed, f keyFate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held = append(r.held, &heldKey{scenario: scenario, key: k})
	for _, l := range k.labels {
		for range r.dlq.count(l) {
			r.want.heldLetter(l)
		}
	}
}

// settleHeld is the operator (operate), in a subtest: skipped when no
// key was held.
func (r *run) settleHeld(ctx context.Context, t *testing.T) {
	r.mu.Lock()
	n := len(r.held)
	r.mu.Unlock()
	if n == 0 {
		if r.p.mayHold() {
			t.Skipf("%s: no key held", r.p)
		}
		t.Skipf("%s never holds a key", r.p)
	}
	if err := r.operate(ctx, t.Logf); err != nil {
		t.Error(err)
	}
}

// operate settles every held key by the probe's answer, redrives its
// messages, and checks each key then applied exactly once.
func (r *run) operate(ctx context.Context, logf func(string, ...any)) error {
	r.mu.Lock()
	held := slices.Clone(r.held)
	r.mu.Unlock()
	labels := map[string]bool{}
	var notDone []string
	for _, h := range held {
		if err := r.resolve(ctx, logf, h); err != nil {
			return fmt.Errorf("%s: %w", h.scenario, err)
		}
		for _, l := range h.key.labels {
			labels[l] = true
		}
		if h.decision == "not-done" {
			notDone = append(notDone, h.key.key)
		}
	}
	err := until(ctx, fmt.Sprintf("the held keys' messages redriven (%d labels)", len(labels)), 2*time.Second, func() (bool, string, error) {
		if err := r.dlq.poll(ctx); err != nil {
			return false, "", err
		}
		_, waiting, err := r.dlq.redrive(ctx, r.st.QueueURL, labels)
		return waiting == 0, fmt.Sprintf("%d messages hidden by an earlier receive", waiting), err
	})
	if err == nil {
		err = r.untilApplied(ctx, notDone)
	}
	if err == nil {
		err = r.untilSettled(ctx)
	}
	if err != nil {
		return err
	}
	keys := make([]string, len(held))
	for i, h := range held {
		keys[i] = h.key.key
	}
	applied, err := r.app.Applied(ctx, r.st, keys)
	if err != nil {
		return fmt.Errorf("App.Applied: %w", err)
	}
	var errs []error
	for _, h := range held {
		if err := r.p.settled(h.key.key, applied[h.key.key], h.decision); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", h.scenario, err))
		}
	}
	return errors.Join(errs...)
}

// resolve settles one held key: done if the probe counts its effect,
// not-done otherwise, written over the record as read (Resolve's fence);
// a held record has no expiry, and gets the consumer's retention.
func (r *run) resolve(ctx context.Context, logf func(string, ...any), h *heldKey) error {
	key := h.key.key
	rec, found, err := r.rc.get(ctx, key)
	switch {
	case err != nil:
		return err
	case !found || rec.Status != idem.StatusHeld:
		return fmt.Errorf("%s: key %s no longer held (found %t, %s) when the operator came to settle it", r.p, key, found, rec.Status)
	}
	applied, err := r.app.Applied(ctx, r.st, []string{key})
	if err != nil {
		return fmt.Errorf("App.Applied: %w", err)
	}
	to, decision := idem.StatusFailed, "not-done"
	if applied[key] > 0 {
		to, decision = idem.StatusCompleted, "done"
	}
	now := time.Now()
	expires := rec.ExpiresAt
	if expires.IsZero() {
		expires = now.Add(r.retention)
	}
	if _, changed, err := r.rc.store.Resolve(ctx, r.rc.storageKey(key), rec, to, expires, now); err != nil || changed {
		return fmt.Errorf("%s: settling key %s (resolve --%s): changed %t, %v", r.p, key, decision, changed, err)
	}
	r.mu.Lock()
	h.decision = decision
	r.mu.Unlock()
	logf("%s: key %s held; the probe counts %d: resolve --%s", h.scenario, key, applied[key], decision)
	return nil
}
