package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// defaultMaxPeek bounds how many DLQ messages inspect and stats read.
const defaultMaxPeek = 1000

type inspectFlags struct {
	storageKeys, noDLQ bool
	maxPeek            int
}

func inspectCommand() *command {
	var f inspectFlags
	return &command{
		name: "inspect", args: "KEY...",
		summary: "what each key's record says: status, attempts, lease, error, result, retention, what it means, and whether its message is in the DLQ and what redrive does with it; exits 1 when a KEY has no record",
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&f.storageKeys, "storage-key", false, "the KEYs are storage keys (namespace#sha256), as list prints them and the consumer logs them (storage_key)")
			fs.BoolVar(&f.noDLQ, "no-dlq", false, "do not look for the keys' messages in the dead-letter queue")
			fs.IntVar(&f.maxPeek, "max-peek", defaultMaxPeek, "read at most this many DLQ messages")
		},
		run: func(ctx context.Context, a *app, args []string) error { return a.inspect(ctx, f, args) },
	}
}

// inspectView is inspect's JSON.
type inspectView struct {
	storeView
	Namespace string       `json:"namespace"`
	Now       time.Time    `json:"now"`
	DLQ       dlqCheck     `json:"dlq"`
	Keys      []recordView `json:"keys"`
}

// dlqCheck says how the DLQ was searched for the keys' messages.
type dlqCheck struct {
	URL     string `json:"url,omitempty"`
	Checked bool   `json:"checked"`
	// Complete: every visible message was read, so a key without a
	// message has none there (in flight ones aside).
	Complete bool   `json:"complete"`
	Read     int    `json:"messagesRead"`
	Note     string `json:"note,omitempty"`
}

func (a *app) inspect(ctx context.Context, f inspectFlags, args []string) error {
	if len(args) == 0 {
		return usagef("inspect: no KEY")
	}
	if f.maxPeek < 1 {
		return usagef("--max-peek %d: at least 1", f.maxPeek)
	}
	r, err := a.resources(ctx)
	if err != nil {
		return err
	}
	rc, err := a.openReceipts(ctx, r)
	if err != nil {
		return err
	}
	skeys := make([]string, len(args))
	for i, arg := range args {
		if skeys[i], err = rc.storageKey(arg, f.storageKeys); err != nil {
			return err
		}
	}
	out := inspectView{storeView: rc.store, Namespace: rc.namespace}
	for i, skey := range skeys {
		rec, found, err := rc.get(ctx, skey)
		if err != nil {
			return err
		}
		typed := args[i]
		if f.storageKeys {
			typed = ""
		}
		out.Keys = append(out.Keys, a.view(rec, found, skey, typed, a.now()))
	}
	byKey, check, err := a.dlqByKey(ctx, rc, r, f)
	if err != nil {
		return err
	}
	out.DLQ = check
	if err := a.attachDLQ(ctx, r, rc, out.Keys, skeys, byKey, check); err != nil {
		return err
	}
	out.Now = a.now().UTC().Truncate(time.Second)
	err = a.emit(out, func(w io.Writer) {
		fmt.Fprintf(w, "%s, namespace %s, at %s\n\n", out.where(), out.Namespace, stamp(out.Now))
		for i, v := range out.Keys {
			a.printRecord(w, v)
			fmt.Fprintf(w, "  in DLQ\t%s\n", inDLQ(out.Keys[i].DLQ, check, out.Now))
			fmt.Fprintln(w)
		}
	})
	if err != nil {
		return err
	}
	return unknownKeys(out.Keys, rc)
}

// unknownKeys is errNotFound (exit 1) when a key has no record: "an
// unknown key", as for resolve, once every key has been printed. An
// expired record is a known key.
func unknownKeys(keys []recordView, rc *receipts) error {
	var absent []string
	for _, v := range keys {
		if v.State == stateAbsent {
			absent = append(absent, orDefault(v.Key, v.StorageKey))
		}
	}
	switch len(absent) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%w: no record for %s in namespace %s of %s (check the key, --namespace and --plain-keys)", errNotFound, absent[0], rc.namespace, rc.store.where())
	}
	return fmt.Errorf("%w: no record for %d of %d keys (%s) in namespace %s of %s (check the keys, --namespace and --plain-keys)",
		errNotFound, len(absent), len(keys), strings.Join(absent, ", "), rc.namespace, rc.store.where())
}
