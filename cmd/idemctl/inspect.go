package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
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
		summary: "what each key's record says: status, attempts, lease, error, result, retention, what it means, and whether its message is in the DLQ",
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&f.storageKeys, "storage-key", false, "the KEYs are storage keys (namespace#sha256), as list prints them and the consumer logs them (record_key)")
			fs.BoolVar(&f.noDLQ, "no-dlq", false, "do not look for the keys' messages in the dead-letter queue")
			fs.IntVar(&f.maxPeek, "max-peek", defaultMaxPeek, "read at most this many DLQ messages")
		},
		run: func(ctx context.Context, a *app, args []string) error { return a.inspect(ctx, f, args) },
	}
}

// inspectView is inspect's JSON.
type inspectView struct {
	Table     string       `json:"table"`
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
	out := inspectView{Table: rc.table, Namespace: rc.namespace}
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
	for i := range out.Keys {
		for _, m := range byKey[skeys[i]] {
			out.Keys[i].DLQ = append(out.Keys[i].DLQ, a.messageView(m))
		}
	}
	out.Now = a.now().UTC().Truncate(time.Second)
	return a.emit(out, func(w io.Writer) {
		fmt.Fprintf(w, "table %s, namespace %s, at %s\n\n", out.Table, out.Namespace, stamp(out.Now))
		for i, v := range out.Keys {
			a.printRecord(w, v)
			fmt.Fprintf(w, "  in DLQ\t%s\n", inDLQ(out.Keys[i].DLQ, check, out.Now))
			fmt.Fprintln(w)
		}
	})
}

// dlqByKey reads the DLQ and groups its messages by storage key, when it
// can: it needs the DLQ and the key field.
func (a *app) dlqByKey(ctx context.Context, rc *receipts, r resources, f inspectFlags) (map[string][]message, dlqCheck, error) {
	check := dlqCheck{URL: r.dlqURL}
	switch {
	case f.noDLQ:
		check.Note = "not checked (--no-dlq)"
		return nil, check, nil
	case r.dlqURL == "":
		check.Note = "not checked: no dead-letter queue (--stack or --dlq-url)"
		return nil, check, nil
	case r.keyField == "":
		check.Note = fmt.Sprintf("not checked: no key field (the stack's %s output, or --key-field)", consumer.OutputKey)
		return nil, check, nil
	}
	dlq, err := a.openQueue(ctx, r.dlqURL, "--dlq-url")
	if err != nil {
		return nil, check, err
	}
	msgs, complete, err := a.peek(ctx, dlq, f.maxPeek)
	if err != nil {
		return nil, check, err
	}
	check.Checked, check.Complete, check.Read = true, complete, len(msgs)
	keyOf := consumer.KeyField(r.keyField)
	byKey := map[string][]message{}
	for _, m := range msgs {
		if key, err := keyOf(m.event()); err == nil {
			skey := rc.guard.StorageKey(key)
			byKey[skey] = append(byKey[skey], m)
		}
	}
	return byKey, check, nil
}

// inDLQ says whether a key's message is in the DLQ, and how sure that is.
func inDLQ(found []messageView, check dlqCheck, now time.Time) string {
	if !check.Checked {
		return check.Note
	}
	if len(found) == 0 {
		if check.Complete {
			return fmt.Sprintf("no (read all %d messages)", check.Read)
		}
		return fmt.Sprintf("not among the first %d messages read (--max-peek)", check.Read)
	}
	const listed = 3
	s := fmt.Sprintf("yes, %d message(s):", len(found))
	for _, m := range found[:min(listed, len(found))] {
		sent := "-"
		if m.SentAt != nil {
			sent = relative(now, *m.SentAt)
		}
		s += fmt.Sprintf(" %s (sent %s, %d receives)", m.MessageID, sent, m.Receives)
		if m.Body != nil {
			s += fmt.Sprintf(" body %q", *m.Body)
		}
	}
	if len(found) > listed {
		s += fmt.Sprintf(" and %d more (--output json lists them)", len(found)-listed)
	}
	return s
}
