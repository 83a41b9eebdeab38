//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/integration/internal/emu"
	"github.com/exactlyonce/sqsidem/integration/internal/system"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// A consumer that promises at most once (lease mode, hold, no reconcile)
// leaves every key whose outcome it could not know HELD, its messages in
// the DLQ with the reason: a person's work. The scenarios play that
// person, as the runbook says (docs/operations.md, AlarmHeld; "A remote
// that cannot be asked"): list the held keys, look each one up in the
// effect's truth (the probe: the partner's count, the ledger), settle it
// with idemctl resolve --done or --not-done, redrive the DLQ, and check
// that every key is then applied exactly once.

// heldKeys returns the keys of keys whose record is HELD.
func heldKeys(t *testing.T, s *system.System, keys []string) []string {
	t.Helper()
	var held []string
	for _, k := range keys {
		if status(s, k) == idem.StatusHeld {
			held = append(held, k)
		}
	}
	return held
}

// wantHeld checks what at most once leaves of a key whose outcome the
// consumer could not know (a crash, an error not marked definite): HELD,
// applied at most once, and its messages in the DLQ with the reason
// idem.ErrHeld.
func wantHeld(t *testing.T, s *system.System, r system.Report, key, why string) {
	t.Helper()
	rec := receipt(t, s, key)
	reasons := []string{}
	for _, d := range r.DeadLetters {
		if d.Key == key {
			reasons = append(reasons, d.Reason)
		}
	}
	switch {
	case rec.Status != idem.StatusHeld:
		t.Fatalf("%s: %s: key %s has a %s record (%d attempts), want HELD for an operator", s.Promise, why, key, rec.Status, rec.Attempts)
	case !slices.ContainsFunc(reasons, func(r string) bool { return strings.Contains(r, idem.ErrHeld.Error()) }):
		t.Fatalf("%s: %s: key %s is HELD and its dead letters say %q; want the reason %q", s.Promise, why, key, reasons, idem.ErrHeld)
	}
}

// settleHeld plays the operator for keys, whose messages are done: each
// key whose record is not COMPLETED (HELD, or released into the DLQ on
// its last receive) is looked up in the effect's truth and settled with
// idemctl resolve (--done if the effect took place, --not-done
// otherwise), and the DLQ is redriven with idemctl redrive, until every
// key is COMPLETED: at most three rounds, since a redriven message may
// meet an unknown outcome in turn (a loaded machine's timeout) and be
// held again. idemctl list --status held must list every held key first.
// It returns the report after (check), in which every key of keys must
// have been applied exactly once. The consumers must be polling the
// queue (the system's poller).
func settleHeld(t *testing.T, s *system.System, msgs []system.Message, keys []string, deadIDs ...string) system.Report {
	t.Helper()
	ctx := ctxFor(t, redeliveries(s, 12)+3*time.Minute)
	cli := newSystemCLI(ctx, t, s)
	if held := heldKeys(t, s, keys); len(held) > 0 {
		out := cli.quiet(ctx, t, "list", "--status", "held", "--limit", "0")
		for _, k := range held {
			if !strings.Contains(out, s.StorageKey(k)) && !strings.Contains(out, k) {
				t.Errorf("idemctl list --status held does not list %s:\n%s", k, out)
			}
		}
	}
	for round := 1; ; round++ {
		applied, err := s.Applied(ctx, keys)
		if err != nil {
			t.Fatal(err)
		}
		open := 0
		for _, k := range keys {
			rec, found, err := s.Receipt(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			if applied[k] > 1 {
				t.Fatalf("%s: key %s applied %d times (round %d of resolve and redrive)", s.Promise, k, applied[k], round)
			}
			switch {
			case found && rec.Status == idem.StatusCompleted:
				continue
			case !found && applied[k] == 0:
				// Never taken (its receives spent on store failures, say):
				// the redrive moves its message back as it is.
				open++
				continue
			case !found:
				continue
			}
			open++
			decision := "--not-done"
			if applied[k] > 0 {
				decision = "--done"
			}
			cli.quiet(ctx, t, "resolve", k, decision, "--yes")
		}
		if open == 0 {
			break
		}
		if round > 3 {
			t.Fatalf("%s: %d keys still not done after 3 rounds of resolve and redrive", s.Promise, open)
		}
		// Every dead letter visible (none hidden by a read), then
		// --max-attempts: the held records' attempts are the operator's
		// to judge here, not a poison count.
		waitNoneInFlight(ctx, t, s, s.DLQ.URL)
		cli.run(ctx, t, "redrive", "--max-attempts", "100")
		drain(t, s, redeliveries(s, 4))
	}
	r := check(t, s, msgs, deadIDs...)
	// A second copy of a settled key waits in the DLQ while its first goes
	// back (idemctl redrive moves one per key): the next redrive deletes
	// it, its key done.
	if slices.ContainsFunc(r.DeadLetters, func(d system.DeadLetter) bool { return slices.Contains(keys, d.Key) }) {
		waitNoneInFlight(ctx, t, s, s.DLQ.URL)
		cli.run(ctx, t, "redrive", "--max-attempts", "100")
		drain(t, s, redeliveries(s, 4))
		r = check(t, s, msgs, deadIDs...)
	}
	for _, k := range keys {
		if n := r.Times[k]; n != 1 {
			t.Errorf("%s, settled by the operator and redriven: key %s applied %d times, want exactly 1", s.Promise, k, n)
		}
	}
	return r
}

// waitNoneInFlight waits until no message of queue is hidden (in flight):
// a redrive reads only what is visible.
func waitNoneInFlight(ctx context.Context, t *testing.T, s *system.System, queue string) {
	t.Helper()
	for {
		_, inFlight, err := s.Depth(ctx, queue)
		if err != nil {
			t.Fatal(err)
		}
		if inFlight == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for the %d hidden messages of %s to be visible: %v", inFlight, queue, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// settleLeft is settleHeld for what the consumer left to a person among
// msgs, whose messages are done: under any promise, a key never applied
// whose messages are in the DLQ (a loaded machine: every receive's store
// request timed out), and, at most once, a key held; r itself when there
// is none. What a scenario calls after its check for the keys it expects
// applied: the runbook (redrive, after resolving what is held or was left
// unknown) recovers each one, and each is then applied exactly once.
func settleLeft(t *testing.T, s *system.System, r system.Report, msgs []system.Message, deadIDs ...string) system.Report {
	t.Helper()
	var open []string
	for _, m := range msgs {
		if r.Times[m.Key] == 0 || (s.Promise.Is(consumer.GuaranteeAtMostOnce) && status(s, m.Key) == idem.StatusHeld) {
			open = append(open, m.Key)
		}
	}
	if len(open) == 0 {
		return r
	}
	open = slices.Compact(slices.Sorted(slices.Values(open)))
	t.Logf("%s: %d keys not done (%v): the operator settles them", s.Promise, len(open), open)
	return settleHeld(t, s, msgs, open, deadIDs...)
}

// goBuild builds pkg, a package of the repository at root, into bin.
func goBuild(ctx context.Context, root, bin, pkg string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	return nil
}

var idemctlBuild struct {
	once     sync.Once
	dir, bin string
	err      error
}

// sharedIdemctl builds the operator's CLI once per run (TestMain removes
// it): the scenarios that play the operator share it.
func sharedIdemctl(t *testing.T) string {
	t.Helper()
	b := &idemctlBuild
	b.once.Do(func() {
		root, err := emu.RepoRoot()
		if err != nil {
			b.err = err
			return
		}
		if b.dir, b.err = os.MkdirTemp("", "sqsidem-idemctl-"); b.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		b.bin = filepath.Join(b.dir, "idemctl")
		b.err = goBuild(ctx, root, b.bin, "./cmd/idemctl")
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}
