package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

type listFlags struct {
	status    string
	olderThan time.Duration
	segments  int
	limit     int
}

// statusAll lists every record of the namespace.
const statusAll = "all"

func listCommand() *command {
	var f listFlags
	return &command{
		name: "list", args: "",
		summary: "the namespace's records in one state, oldest first, read by a parallel scan",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&f.status, "status", statusAll, "in-progress, unconfirmed (in progress, lease ended), failed, unknown (an outcome to reconcile), held (waiting for resolve), completed, expired or all")
			fs.DurationVar(&f.olderThan, "older-than", 0, "only records last updated longer ago than this (e.g. 15m, 24h)")
			fs.IntVar(&f.segments, "segments", defaultSegments, "parallel scan segments")
			fs.IntVar(&f.limit, "limit", 100, "print at most this many records, oldest first (0: all); all are counted")
		},
		run: func(ctx context.Context, a *app, args []string) error { return a.list(ctx, f, args) },
	}
}

// listView is list's JSON.
type listView struct {
	storeView
	Namespace        string       `json:"namespace"`
	Now              time.Time    `json:"now"`
	Status           string       `json:"status"`
	OlderThanSeconds int64        `json:"olderThanSeconds,omitempty"`
	Matched          int          `json:"matched"`
	Records          []recordView `json:"records"`
}

func (a *app) list(ctx context.Context, f listFlags, args []string) error {
	want, stored, err := parseStatus(f.status)
	switch {
	case err != nil:
		return err
	case len(args) > 0:
		return usagef("list takes no arguments, got %q", args[0])
	case f.segments < 1 || f.segments > 1000:
		return usagef("--segments %d: 1 to 1000", f.segments)
	case f.olderThan < 0 || f.limit < 0:
		return usagef("--older-than and --limit cannot be negative")
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
	cutoff := now.Add(-f.olderThan)
	var recs []idem.Record
	bar := newProgress(a.errOut, a.errTTY, "list "+rc.name, rc.items, a.now)
	err = rc.each(ctx, stored, f.segments, bar, func(rec idem.Record) {
		st := stateOf(rec, true, now)
		if (want == "" || st == want) && (f.olderThan == 0 || rec.UpdatedAt.Before(cutoff)) {
			recs = append(recs, rec)
		}
	})
	if err != nil {
		return err
	}
	slices.SortFunc(recs, func(x, y idem.Record) int { return x.UpdatedAt.Compare(y.UpdatedAt) })
	out := listView{storeView: rc.store, Namespace: rc.namespace, Now: now.UTC().Truncate(time.Second), Status: f.status,
		OlderThanSeconds: seconds(f.olderThan), Matched: len(recs), Records: []recordView{}}
	for i, rec := range recs {
		if f.limit > 0 && i == f.limit {
			break
		}
		out.Records = append(out.Records, a.view(rec, true, rec.Key, "", now))
	}
	return a.emit(out, func(w io.Writer) {
		fmt.Fprintln(w, "STORAGE KEY\tSTATE\tATTEMPTS\tUPDATED\tLEASE UNTIL\tEXPIRES\tLAST ERROR")
		for _, v := range out.Records {
			lease := "-" // only a record in progress is held
			if v.rec.Status == idem.StatusInProgress {
				lease = relative(now, v.rec.LeaseUntil)
			}
			fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", v.StorageKey, v.State, v.Attempts,
				relative(now, v.rec.UpdatedAt), lease, expiry(now, v.rec), orDash(v.LastError))
		}
		more := ""
		if len(out.Records) < out.Matched {
			more = fmt.Sprintf(" (the oldest %d shown: --limit)", len(out.Records))
		}
		fmt.Fprintf(w, "%d %s record(s) in namespace %s of %s%s\n", out.Matched, f.status, rc.namespace, rc.name, more)
		if types := goTypeErrors(out.Records); len(types) > 0 {
			fmt.Fprintf(w, "LAST ERROR %s is %s\n", strings.Join(types, " or "), goTypeNote)
		}
	})
}

// parseStatus turns --status into the state wanted ("" for all) and the
// stored status to filter on server-side ("" for none).
func parseStatus(s string) (want state, stored idem.Status, err error) {
	switch state(s) {
	case statusAll:
		return "", "", nil
	case stateInProgress, stateUnconfirmed:
		return state(s), idem.StatusInProgress, nil
	case stateFailed:
		return stateFailed, idem.StatusFailed, nil
	case stateUnknown:
		return stateUnknown, idem.StatusUnknown, nil
	case stateHeld:
		return stateHeld, idem.StatusHeld, nil
	case stateCompleted:
		return stateCompleted, idem.StatusCompleted, nil
	case stateExpired:
		return stateExpired, "", nil
	}
	names := []string{statusAll}
	for _, st := range states {
		names = append(names, string(st))
	}
	return "", "", usagef("--status %q: one of %s", s, strings.Join(names, ", "))
}

// goTypeErrors are the distinct last errors of recs that are Go types.
func goTypeErrors(recs []recordView) []string {
	var types []string
	for _, v := range recs {
		if goTypeClass(v.LastError) && !slices.Contains(types, v.LastError) {
			types = append(types, v.LastError)
		}
	}
	return types
}
