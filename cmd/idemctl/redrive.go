package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

type redriveFlags struct {
	dryRun      bool
	max         int
	maxAttempts int
	hold        time.Duration
	retention   time.Duration
}

func redriveCommand() *command {
	var f redriveFlags
	return &command{
		name: "redrive", args: "",
		summary: "sort the DLQ into done (deleted), not done (sent back to the queue) and the rest (left, with the reason)",
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&f.dryRun, "dry-run", false, "sort and print, change nothing")
			fs.IntVar(&f.max, "max", 1000, "handle at most this many messages")
			fs.IntVar(&f.maxAttempts, "max-attempts", 0, "a FAILED record with this many attempts is poison (default: the queue's maxReceiveCount)")
			fs.DurationVar(&f.retention, "retention", consumer.DefaultRetention, "how long the consumer keeps receipts (the construct's ReceiptRetention): an older message without a record is left")
			fs.DurationVar(&f.hold, "hold", 5*time.Minute, "how long each message read stays hidden while the run decides; the run stops reading after half of it")
		},
		run: func(ctx context.Context, a *app, args []string) error { return a.redrive(ctx, f, args) },
	}
}

// redriveView is redrive's JSON.
type redriveView struct {
	storeView
	Namespace   string    `json:"namespace"`
	Queue       string    `json:"queue"`
	DLQ         string    `json:"dlq"`
	Now         time.Time `json:"now"`
	DryRun      bool      `json:"dryRun"`
	MaxAttempts int       `json:"maxAttempts"`
	// Complete: the run read every visible message of the DLQ.
	Complete bool         `json:"complete"`
	Messages []redriveRow `json:"messages"`
	// Counts are by class, by action planned ("move", "delete", "leave"),
	// and by what was done: "moved", "deleted", "failed".
	Counts map[string]int `json:"counts"`
}

// redriveRow is one message: its class, the action (done unless dry run
// or Error), and why.
type redriveRow struct {
	MessageID  string  `json:"messageId"`
	StorageKey string  `json:"storageKey,omitempty"`
	Class      class   `json:"class"`
	Action     action  `json:"action"`
	Done       bool    `json:"done"`
	Reason     string  `json:"reason"`
	Error      string  `json:"error,omitempty"`
	Body       *string `json:"body,omitempty"`
}

func (a *app) redrive(ctx context.Context, f redriveFlags, args []string) error {
	switch {
	case len(args) > 0:
		return usagef("redrive takes no arguments, got %q", args[0])
	case f.max < 1 || f.maxAttempts < 0 || f.retention <= 0:
		return usagef("--max and --retention must be positive, --max-attempts not negative")
	case f.hold < 10*time.Second || f.hold > 12*time.Hour:
		return usagef("--hold %s: 10s to 12h (SQS's visibility timeout)", f.hold)
	}
	r, err := a.resources(ctx)
	if err != nil {
		return err
	}
	for _, need := range []func() error{r.needStore, r.needQueue, r.needDLQ, r.needKeyField} {
		if err := need(); err != nil {
			return err
		}
	}
	rc, err := a.openReceipts(ctx, r)
	if err != nil {
		return err
	}
	source, err := a.openQueue(ctx, r.queueURL, "--queue-url")
	if err != nil {
		return err
	}
	dlq, err := a.openQueue(ctx, r.dlqURL, "--dlq-url")
	if err != nil {
		return err
	}
	if err := checkDeadLetter(source, dlq); err != nil {
		return err
	}
	if err := receivable(dlq); err != nil {
		return err
	}
	s := &sorter{
		keyOf:       consumer.KeyField(r.keyField),
		storageKey:  func(key string) (string, error) { return rc.storageKey(key, false) },
		get:         rc.get,
		maxAttempts: orDefaultInt(f.maxAttempts, source.maxReceiveCount()),
		retention:   f.retention,
		moving:      map[string]string{},
	}
	out := redriveView{
		storeView: rc.store, Namespace: rc.namespace, Queue: source.url, DLQ: dlq.url,
		Now: a.now().UTC().Truncate(time.Second), DryRun: f.dryRun, MaxAttempts: s.maxAttempts,
		Messages: []redriveRow{}, Counts: map[string]int{},
	}
	runErr := a.redriveRun(ctx, f, s, source, dlq, &out)
	for _, row := range out.Messages {
		out.Counts[string(row.Class)]++
		out.Counts[string(row.Action)]++
		switch {
		case row.Error != "":
			out.Counts["failed"]++
		case row.Done && row.Action == actMove:
			out.Counts["moved"]++
		case row.Done && row.Action == actDelete:
			out.Counts["deleted"]++
		}
	}
	if err := a.emit(out, func(w io.Writer) { a.printRedrive(w, out) }); err != nil {
		return err
	}
	if runErr == nil && out.Counts["failed"] > 0 {
		runErr = fmt.Errorf("%w: %d message(s) could not be moved or deleted (see the table): nothing is lost, run redrive again", errIncomplete, out.Counts["failed"])
	}
	return runErr
}

// redriveRun reads the DLQ, sorts each message and acts on it. Messages it
// leaves are shown again at the end. A message is sent back before it is
// deleted from the DLQ, so an interruption between the two leaves it in
// both queues: the Guard keeps the two copies from running twice, and a
// later run finds the one in the DLQ done.
func (a *app) redriveRun(ctx context.Context, f redriveFlags, s *sorter, source, dlq queue, out *redriveView) (err error) {
	rd := newReader(a.clients.sqs, dlq.url, f.hold)
	var left []message
	defer func() { err = errors.Join(err, rd.release(ctx, append(left, rd.again...))) }()
	// Stop reading with half the hold left, so that every message read is
	// decided and acted on before it becomes visible again.
	stop := a.now().Add(f.hold / 2)
	for len(out.Messages) < f.max && a.now().Before(stop) {
		batch, err := rd.next(ctx, f.max-len(out.Messages))
		if err != nil {
			return err
		}
		if len(batch) == 0 {
			out.Complete = true
			return nil
		}
		for i, m := range batch {
			row, keep, err := a.redriveOne(ctx, f, s, source, dlq, m)
			if err != nil {
				left = append(left, batch[i:]...)
				return err
			}
			if keep {
				left = append(left, m)
			}
			out.Messages = append(out.Messages, row)
		}
	}
	return nil
}

// redriveOne sorts m and acts on it; keep reports that m stays in the DLQ
// and must be shown again.
func (a *app) redriveOne(ctx context.Context, f redriveFlags, s *sorter, source, dlq queue, m message) (row redriveRow, keep bool, err error) {
	v, err := s.sort(ctx, m, a.now())
	if err != nil {
		return row, true, err
	}
	row = redriveRow{MessageID: m.id, Class: v.class, Action: v.action(), Reason: v.reason}
	if v.skey != "" {
		row.StorageKey = a.shownKey(v.skey)
	}
	if a.showBodies {
		row.Body = &m.body
	}
	if f.dryRun || row.Action == actLeave {
		return row, true, nil
	}
	if row.Action == actMove {
		if err := a.sendBack(ctx, source, m); err != nil {
			delete(s.moving, v.skey) // not sent: a later copy may go instead
			row.Error = oneLine(err)
			return row, true, nil
		}
	}
	if err := a.remove(ctx, dlq, m); err != nil {
		row.Error = oneLine(err)
		if row.Action == actMove {
			row.Error = "sent back, but still in the DLQ (the next redrive finds it done): " + row.Error
			row.Done = true
		}
		return row, true, nil
	}
	row.Done = true
	return row, false, nil
}

func (a *app) printRedrive(w io.Writer, out redriveView) {
	mode := ""
	if out.DryRun {
		mode = " (dry run: nothing changed)"
	}
	fmt.Fprintf(w, "DLQ %s → queue %s, %s, namespace %s, poison at %d attempts%s\n\n", out.DLQ, out.Queue, out.where(), out.Namespace, out.MaxAttempts, mode)
	fmt.Fprintln(w, "MESSAGE ID\tSTORAGE KEY\tCLASS\tACTION\tREASON")
	for _, row := range out.Messages {
		act := string(row.Action)
		switch {
		case row.Error != "":
			act += " FAILED"
		case out.DryRun && row.Action != actLeave:
			act = "would " + act
		}
		reason := row.Reason
		if row.Error != "" {
			reason += " — " + row.Error
		}
		if row.Body != nil {
			reason += fmt.Sprintf(" body %q", *row.Body)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", row.MessageID, orDash(row.StorageKey), row.Class, act, reason)
	}
	whole := "the whole DLQ"
	if !out.Complete {
		whole = "not the whole DLQ: --max or --hold reached, run again"
	}
	var classes []string
	for _, c := range []class{classDone, classNotDone, classMalformed, classPoison, classUnconfirmed, classInProgress, classHeld, classCopy, classTooOld} {
		if n := out.Counts[string(c)]; n > 0 {
			classes = append(classes, fmt.Sprintf("%s %d", c, n))
		}
	}
	done := fmt.Sprintf("moved %d, deleted %d, left %d, failed %d", out.Counts["moved"], out.Counts["deleted"], out.Counts["leave"], out.Counts["failed"])
	if out.DryRun {
		done = fmt.Sprintf("would move %d, would delete %d, would leave %d", out.Counts["move"], out.Counts["delete"], out.Counts["leave"])
	}
	fmt.Fprintf(w, "\nread %d message(s) (%s): %s; %s\n", len(out.Messages), whole, orNone(classes), done)
}

func orDefaultInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}
