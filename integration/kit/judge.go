package kit

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// keyed is a key a scenario judges by the consumer's promise.
type keyed struct {
	key    string
	in     intent
	labels []string // its messages that must end done (or, refused, in the dead-letter queue)
	// refusal: the partner refuses the key's first POST with a 4xx, which
	// the effect must mark definite (idem.Definite): released FAILED and
	// retried at once, never taken for an unknown outcome.
	refusal bool
}

// judgeKeys judges each key of a scenario by what it came to — the
// probe's count, its rerun lines, its receipt, its messages in the
// dead-letter queue — against the promise (promise.judge), and keeps the
// keys the promise parked for the operator (settleHeld).
func (r *run) judgeKeys(ctx context.Context, t *testing.T, scenario string, ks []keyed) {
	t.Helper()
	if len(ks) == 0 {
		return
	}
	keys := make([]string, len(ks))
	for i, k := range ks {
		keys[i] = k.key
	}
	applied, err := r.app.Applied(ctx, r.st, keys)
	if err != nil {
		t.Fatalf("App.Applied: %v", err)
	}
	if err := r.dlq.poll(ctx); err != nil {
		t.Fatal(err)
	}
	scan := r.rerunsOf(ctx, t, ks, applied)
	for _, k := range ks {
		f := keyFate{applied: applied[k.key], reruns: scan.reruns[r.rc.storageKey(k.key)]}
		for _, l := range k.labels {
			f.dead += r.dlq.count(l)
		}
		rec, found, err := r.record(ctx, k.key)
		if err != nil {
			t.Error(err)
		}
		f.held = found && rec.Status == idem.StatusHeld
		if k.refusal {
			if err := refusalDefinite(k, f, rec, found); err != nil {
				t.Errorf("%s: %s: %v", scenario, r.p, err)
			}
		}
		settle, err := r.p.judge(k.key, f, k.in, r.lenient)
		if err != nil {
			t.Errorf("%s: %v", scenario, err)
		}
		state := ""
		if found {
			state = ", receipt " + string(rec.Status)
		}
		t.Logf("%s: key %s applied %d times, %d rerun lines, %d messages in the dead-letter queue%s", scenario, k.key, f.applied, f.reruns, f.dead, state)
		if settle {
			r.hold(scenario, k, f)
		}
	}
}

// rerunsOf scans the consumer's log for rerun lines. A key applied twice
// by a consumer that may re-run is waited for, at most logsTrail (the
// logs trail the invocations, by seconds): without its line, the second
// effect is not the counted window, which judge then says.
func (r *run) rerunsOf(ctx context.Context, t *testing.T, ks []keyed, applied map[string]int) logScan {
	t.Helper()
	var scan logScan
	wctx, cancel := context.WithTimeout(ctx, logsTrail)
	defer cancel()
	err := until(wctx, "the rerun line of every key applied twice", time.Second, func() (bool, string, error) {
		var err error
		if scan, err = r.scanLogs(ctx); err != nil {
			return false, "", err
		}
		for _, k := range ks {
			if r.p.mayRerun() && applied[k.key] == 2 && scan.reruns[r.rc.storageKey(k.key)] == 0 {
				return false, "no rerun line of " + k.key, nil
			}
		}
		return true, "", nil
	})
	if err != nil && scan.reruns == nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Log(err)
	}
	return scan
}

// logsTrail is how long a line the consumer logged may take to show in
// its log group.
const logsTrail = 30 * time.Second

// record is the key's receipt; none (found false, no error) when the
// receipts cannot be read and the promise does not need them (it never
// holds a key).
func (r *run) record(ctx context.Context, key string) (idem.Record, bool, error) {
	if r.rc.store == nil && !r.p.mayHold() {
		return idem.Record{}, false, nil
	}
	return r.rc.get(ctx, key)
}

// refusalDefinite: a key whose POST the partner refused with a 4xx was
// released as a definite failure, not taken for an unknown outcome:
// never re-run, never held, and, if the partner refuses it for good,
// left FAILED.
func refusalDefinite(k keyed, f keyFate, rec idem.Record, found bool) error {
	var took string
	switch {
	case f.reruns > 0:
		took = "it was re-run after an unknown outcome"
	case f.held:
		took = "it was held as an unknown outcome"
	case found && k.in == toRefuse && rec.Status != idem.StatusFailed:
		took = fmt.Sprintf("its receipt is %s, not %s", rec.Status, idem.StatusFailed)
	default:
		return nil
	}
	return fmt.Errorf("key %s: the partner refused it (4xx), but %s: the effect must mark a refusal definite (idem.Definite), so that nothing is taken for an effect that may have happened", k.key, took)
}
