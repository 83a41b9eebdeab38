package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

type statsFlags struct {
	segments, maxPeek int
}

func statsCommand() *command {
	var f statsFlags
	return &command{
		name: "stats", args: "",
		summary: "records by state, the depth of the queue and the DLQ, and the age of their oldest message",
		flags: func(fs *flag.FlagSet) {
			fs.IntVar(&f.segments, "segments", defaultSegments, "parallel scan segments")
			fs.IntVar(&f.maxPeek, "max-peek", defaultMaxPeek, "read at most this many DLQ messages for their age, when CloudWatch has none")
		},
		run: func(ctx context.Context, a *app, args []string) error { return a.stats(ctx, f, args) },
	}
}

// statsView is stats' JSON.
type statsView struct {
	storeView
	Namespace string         `json:"namespace"`
	Now       time.Time      `json:"now"`
	Records   map[string]int `json:"records"` // by state, and "total"
	Queue     *queueStats    `json:"queue,omitempty"`
	DLQ       *queueStats    `json:"dlq,omitempty"`
}

// queueStats is a queue's depth and the age of its oldest message, with
// where that age comes from: "cloudwatch" (ApproximateAgeOfOldestMessage),
// "peek" (the oldest SentTimestamp read, DLQ only) or "none".
type queueStats struct {
	URL              string `json:"url"`
	Visible          int    `json:"visible"`
	InFlight         int    `json:"inFlight"`
	Delayed          int    `json:"delayed"`
	OldestAgeSeconds *int64 `json:"oldestAgeSeconds,omitempty"`
	OldestSource     string `json:"oldestSource"`
	OldestNote       string `json:"oldestNote,omitempty"`
}

func (a *app) stats(ctx context.Context, f statsFlags, args []string) error {
	switch {
	case len(args) > 0:
		return usagef("stats takes no arguments, got %q", args[0])
	case f.segments < 1 || f.segments > 1000 || f.maxPeek < 1:
		return usagef("--segments: 1 to 1000; --max-peek: at least 1")
	}
	r, err := a.resources(ctx)
	if err != nil {
		return err
	}
	rc, err := a.openReceipts(ctx, r)
	if err != nil {
		return err
	}
	now := a.now()
	out := statsView{storeView: rc.store, Namespace: rc.namespace, Now: now.UTC().Truncate(time.Second), Records: map[string]int{"total": 0}}
	for _, st := range states {
		out.Records[string(st)] = 0
	}
	bar := newProgress(a.errOut, a.errTTY, "stats "+rc.name, rc.items, a.now)
	err = rc.each(ctx, "", f.segments, bar, func(rec idem.Record) {
		out.Records[string(stateOf(rec, true, now))]++
		out.Records["total"]++
	})
	if err != nil {
		return err
	}
	var queues []queue
	for _, q := range []struct{ url, flag string }{{r.queueURL, "--queue-url"}, {r.dlqURL, "--dlq-url"}} {
		if q.url == "" {
			queues = append(queues, queue{})
			continue
		}
		qq, err := a.openQueue(ctx, q.url, q.flag)
		if err != nil {
			return err
		}
		queues = append(queues, qq)
	}
	ages := a.oldestAges(ctx, queues, now)
	if queues[0].url != "" {
		out.Queue = depth(queues[0], ages[0])
		if out.Queue.OldestSource == "none" {
			out.Queue.OldestNote += "; idemctl never receives from the queue (a receive counts towards maxReceiveCount)"
		}
	}
	if queues[1].url != "" {
		out.DLQ = depth(queues[1], ages[1])
		if out.DLQ.OldestSource == "none" {
			if err := a.peekAge(ctx, queues[1], f.maxPeek, out.DLQ, now); err != nil {
				return err
			}
		}
	}
	return a.emit(out, func(w io.Writer) { printStats(w, out) })
}

func depth(q queue, age oldest) *queueStats {
	return &queueStats{
		URL:              q.url,
		Visible:          q.count(sqstypes.QueueAttributeNameApproximateNumberOfMessages),
		InFlight:         q.count(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible),
		Delayed:          q.count(sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed),
		OldestAgeSeconds: age.seconds, OldestSource: age.source, OldestNote: age.note,
	}
}

// peekAge sets the DLQ's oldest age from the SentTimestamp of the
// messages read: the original send, which SQS keeps when it dead-letters
// a message.
func (a *app) peekAge(ctx context.Context, dlq queue, max int, s *queueStats, now time.Time) error {
	if receivable(dlq) != nil {
		return nil
	}
	msgs, complete, err := a.peek(ctx, dlq, max)
	if err != nil {
		return err
	}
	var first time.Time
	for _, m := range msgs {
		if first.IsZero() || (!m.sentAt.IsZero() && m.sentAt.Before(first)) {
			first = m.sentAt
		}
	}
	if first.IsZero() {
		s.OldestSource, s.OldestNote = "peek", "no visible message to read"
		return nil
	}
	age := seconds(now.Sub(first))
	s.OldestAgeSeconds, s.OldestSource = &age, "peek"
	s.OldestNote = fmt.Sprintf("the oldest SentTimestamp of %d message(s) read", len(msgs))
	if !complete {
		s.OldestNote += fmt.Sprintf(", not all of them (--max-peek %d)", max)
	}
	return nil
}

func printStats(w io.Writer, out statsView) {
	fmt.Fprintf(w, "%s, namespace %s, at %s\n\n", out.where(), out.Namespace, stamp(out.Now))
	var counts []string
	for _, st := range states {
		counts = append(counts, fmt.Sprintf("%s %d", st, out.Records[string(st)]))
	}
	fmt.Fprintf(w, "records\t%d: %s\n", out.Records["total"], strings.Join(counts, ", "))
	for _, q := range []struct {
		name string
		s    *queueStats
	}{{"queue", out.Queue}, {"dlq", out.DLQ}} {
		if q.s == nil {
			fmt.Fprintf(w, "%s\t-\n", q.name)
			continue
		}
		age := "unknown"
		if q.s.OldestAgeSeconds != nil {
			age = human(time.Duration(*q.s.OldestAgeSeconds) * time.Second)
		}
		fmt.Fprintf(w, "%s\t%s\n\t%d visible, %d in flight, %d delayed; oldest %s (%s: %s)\n",
			q.name, q.s.URL, q.s.Visible, q.s.InFlight, q.s.Delayed, age, q.s.OldestSource, q.s.OldestNote)
	}
}
