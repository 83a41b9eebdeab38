package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

type resolveFlags struct {
	done, notDone, yes, storageKey bool
	retention                      time.Duration
}

func resolveCommand() *command {
	var f resolveFlags
	return &command{
		name: "resolve", args: "KEY --done|--not-done",
		summary: "after checking downstream, write the key's receipt (--done) or release it (--not-done), fenced by the record as it was read; settles a held key",
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&f.done, "done", false, "the effect happened: write the receipt (COMPLETED); every later copy is skipped")
			fs.BoolVar(&f.notDone, "not-done", false, "the effect did not happen: release the record (FAILED); the next copy runs it")
			fs.BoolVar(&f.yes, "yes", false, "do not ask for confirmation")
			fs.BoolVar(&f.storageKey, "storage-key", false, "KEY is a storage key (namespace#sha256), as list prints it and the consumer logs it (storage_key)")
			fs.DurationVar(&f.retention, "retention", consumer.DefaultRetention, "how long the consumer keeps receipts (the construct's ReceiptRetention): the expiry given to a record that has none (a held one)")
		},
		run: func(ctx context.Context, a *app, args []string) error { return a.resolve(ctx, f, args) },
	}
}

// resolveView is resolve's JSON.
type resolveView struct {
	storeView
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
	case f.retention <= 0:
		return usagef("--retention %s: must be positive", f.retention)
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
	out := resolveView{storeView: rc.store, Namespace: rc.namespace, Now: now.UTC().Truncate(time.Second), Decision: decision, Before: before}
	name := orDefault(typed, before.StorageKey)

	// A held record has no expiry; what resolve writes gets the
	// consumer's retention, as an acquire would have given it, so that
	// nothing settled stays for ever.
	expires := rec.ExpiresAt
	if expires.IsZero() {
		expires = now.Add(f.retention)
	}
	write, note, err := decide(before, to, expires, rc, name)
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
	after, err := rc.settle(ctx, skey, rec, to, expires, a.now())
	if errors.Is(err, errChanged) && after.Status == "" {
		return fmt.Errorf("%w; nothing written", err) // gone
	}
	if errors.Is(err, errChanged) {
		st := stateOf(after, true, a.now())
		return fmt.Errorf("%w: it is now %s (%s, %d attempt(s), updated %s); nothing written: inspect it again", err, st, after.Status, after.Attempts, stamp(after.UpdatedAt))
	}
	if err != nil {
		return err
	}
	av := a.view(after, true, skey, typed, a.now())
	out.Written, out.Note, out.After = true, fmt.Sprintf("written: %s — %s", to, next(to, before.State)), &av
	return a.emit(out, func(w io.Writer) {
		fmt.Fprintf(w, "%s\n\n", out.Note)
		a.printRecord(w, av)
	})
}

// next is what follows a write of to over a record that was in state
// from, for the key's copies and its messages in the DLQ.
func next(to idem.Status, from state) string {
	switch {
	case to == idem.StatusCompleted:
		return "every later copy of the key is skipped; if its messages are in the DLQ, `idemctl redrive` deletes them as done"
	case from == stateHeld || from == stateUnknown:
		return "the next copy of the key runs the effect without reconciling; if its messages are in the DLQ, `idemctl redrive` sends them back"
	}
	return "the next copy of the key runs the effect; if its messages are in the DLQ, `idemctl redrive` sends them back"
}

// decide says whether resolve writes to over the record v shows, and why
// (or why not, as a note when there is nothing to do, as an error when it
// refuses); expires is the expiry the write leaves.
func decide(v recordView, to idem.Status, expires time.Time, rc *receipts, name string) (write bool, note string, err error) {
	rec, now := v.rec, v.now
	switch v.State {
	case stateAbsent:
		return false, "", fmt.Errorf("%w: no record for %s in namespace %s of %s (check the key, --namespace and --plain-keys)", errNotFound, name, rc.namespace, rc.store.where())
	case stateExpired:
		return false, "", fmt.Errorf("%w: the record of %s expired %s ago and counts as absent: there is nothing to resolve", errRefused, name, since(now, rec.ExpiresAt))
	case stateInProgress:
		return false, "", fmt.Errorf("%w: an attempt holds %s until %s (%s left) and may be running the effect now: wait for the lease to end, then check downstream", errRefused, name, stamp(rec.LeaseUntil), until(now, rec.LeaseUntil))
	case stateUnrecognized:
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
	keep := stamp(expires)
	if rec.ExpiresAt.IsZero() {
		keep += ", --retention from now: the record had no expiry"
	}
	if to == idem.StatusCompleted {
		return true, fmt.Sprintf("(the receipt: every later copy of the key is skipped until %s), %s", keep, fence), nil
	}
	if v.State == stateHeld || v.State == stateUnknown {
		// FAILED is a definite failure: the Guard runs the effect
		// without asking the partner first.
		return true, fmt.Sprintf("(released as a definite failure: the next copy of the key runs the effect without reconciling; kept until %s), %s", keep, fence), nil
	}
	return true, "(released: the next copy of the key runs the effect), " + fence, nil
}

// short is the start of a lease token, enough to tell two apart.
func short(token string) string { return token[:min(8, len(token))] }
