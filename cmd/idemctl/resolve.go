package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

type resolveFlags struct {
	done, notDone, yes, storageKey bool
}

func resolveCommand() *command {
	var f resolveFlags
	return &command{
		name: "resolve", args: "KEY --done|--not-done",
		summary: "after checking downstream, write the key's receipt (--done) or release it (--not-done), fenced by the record as it was read",
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&f.done, "done", false, "the effect happened: write the receipt (COMPLETED); every later copy is skipped")
			fs.BoolVar(&f.notDone, "not-done", false, "the effect did not happen: release the record (FAILED); the next copy runs it")
			fs.BoolVar(&f.yes, "yes", false, "do not ask for confirmation")
			fs.BoolVar(&f.storageKey, "storage-key", false, "KEY is a storage key (namespace#sha256), as list prints it and the consumer logs it (record_key)")
		},
		run: func(ctx context.Context, a *app, args []string) error { return a.resolve(ctx, f, args) },
	}
}

// resolveView is resolve's JSON.
type resolveView struct {
	Table     string      `json:"table"`
	Namespace string      `json:"namespace"`
	Now       time.Time   `json:"now"`
	Decision  string      `json:"decision"` // "done" or "not-done"
	Written   bool        `json:"written"`
	Note      string      `json:"note"`
	Before    recordView  `json:"before"`
	After     *recordView `json:"after,omitempty"`
}

func (a *app) resolve(ctx context.Context, f resolveFlags, args []string) error {
	switch {
	case len(args) != 1:
		return usagef("resolve takes one KEY, got %d", len(args))
	case f.done == f.notDone:
		return usagef("resolve: pass --done or --not-done, after checking downstream")
	}
	to, decision := idem.StatusCompleted, "done"
	if f.notDone {
		to, decision = idem.StatusFailed, "not-done"
	}
	r, err := a.resources(ctx)
	if err != nil {
		return err
	}
	rc, err := a.openReceipts(ctx, r)
	if err != nil {
		return err
	}
	skey, err := rc.storageKey(args[0], f.storageKey)
	if err != nil {
		return err
	}
	typed := args[0]
	if f.storageKey {
		typed = ""
	}
	rec, found, err := rc.get(ctx, skey)
	if err != nil {
		return err
	}
	now := a.now()
	before := a.view(rec, found, skey, typed, now)
	out := resolveView{Table: rc.table, Namespace: rc.namespace, Now: now.UTC().Truncate(time.Second), Decision: decision, Before: before}
	name := orDefault(typed, before.StorageKey)

	write, note, err := decide(before, to, rc, name)
	if err != nil || !write {
		if err == nil {
			out.Note = note
			return a.emit(out, func(w io.Writer) {
				a.printRecord(w, before)
				fmt.Fprintf(w, "\n%s\n", note)
			})
		}
		return err
	}
	if a.output == outputTable {
		err := a.aligned(func(w io.Writer) {
			a.printRecord(w, before)
			fmt.Fprintf(w, "\nwill write %s %s\n", to, note)
		})
		if err != nil {
			return err
		}
	}
	if !f.yes {
		if err := a.confirm(ctx, fmt.Sprintf("Write %s for %s (now %s)?", to, name, before.State)); err != nil {
			return err
		}
	}
	after, err := rc.settle(ctx, skey, rec, to, a.now())
	if errors.Is(err, errChanged) {
		st := stateOf(after, true, a.now())
		return fmt.Errorf("%w: it is now %s (%s, %d attempt(s), updated %s); nothing written: inspect it again", err, st, after.Status, after.Attempts, stamp(after.UpdatedAt))
	}
	if err != nil {
		return err
	}
	av := a.view(after, true, skey, typed, a.now())
	out.Written, out.Note, out.After = true, fmt.Sprintf("written: %s", to), &av
	return a.emit(out, func(w io.Writer) {
		fmt.Fprintf(w, "written: %s\n\n", to)
		a.printRecord(w, av)
	})
}

// decide says whether resolve writes to over the record v shows, and why
// (or why not, as a note when there is nothing to do, as an error when it
// refuses).
func decide(v recordView, to idem.Status, rc *receipts, name string) (write bool, note string, err error) {
	rec, now := v.rec, v.now
	switch v.State {
	case stateAbsent:
		return false, "", fmt.Errorf("%w: no record for %s in namespace %s of table %s (check the key, --namespace and --plain-keys)", errNotFound, name, rc.namespace, rc.table)
	case stateExpired:
		return false, "", fmt.Errorf("%w: the record of %s expired %s ago and counts as absent: there is nothing to resolve", errRefused, name, since(now, rec.ExpiresAt))
	case stateInProgress:
		return false, "", fmt.Errorf("%w: an attempt holds %s until %s (%s left) and may be running the effect now: wait for the lease to end, then check downstream", errRefused, name, stamp(rec.LeaseUntil), until(now, rec.LeaseUntil))
	case stateUnknown:
		return false, "", fmt.Errorf("%w: %s has status %q, which the idem library never writes", errRefused, name, rec.Status)
	case stateCompleted:
		if to == idem.StatusCompleted {
			return false, "already completed: nothing written", nil
		}
		return false, "", fmt.Errorf("%w: %s has a receipt (COMPLETED): idemctl never releases a receipt, since every later copy would run the effect again", errRefused, name)
	case stateFailed:
		if to == idem.StatusFailed {
			return false, "already released (FAILED): nothing written; the next delivery runs the effect — if its message is in the DLQ, only once `idemctl redrive` sends it back", nil
		}
	}
	fence := fmt.Sprintf("only if the record is still %s with lease %s…, %d attempt(s), updated %s", rec.Status, short(rec.Lease), rec.Attempts, stamp(rec.UpdatedAt))
	if to == idem.StatusCompleted {
		return true, fmt.Sprintf("(the receipt: every later copy of the key is skipped until %s), %s", stamp(rec.ExpiresAt), fence), nil
	}
	return true, "(released: the next copy of the key runs the effect), " + fence, nil
}

// short is the start of a lease token, enough to tell two apart.
func short(token string) string { return token[:min(8, len(token))] }
