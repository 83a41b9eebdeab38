package sim

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// trace is what happened in a schedule, for a reader: who did what, at
// which virtual time. Lines written at the same virtual time by goroutines
// running at once are sorted by actor, so that a seed prints the same trace
// every time.
type trace struct {
	start time.Time
	mu    sync.Mutex
	lines []traceLine
}

type traceLine struct {
	at     time.Duration
	step   int // the scheduler's steps so far: lines of one step were written by goroutines running at once
	seq    int
	actor  string
	format string
	args   []any // formatted only when the trace is printed: most never are
}

func (t *trace) add(at time.Duration, step int, actor, format string, args []any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, traceLine{at: at, step: step, seq: len(t.lines), actor: actor, format: format, args: args})
}

// String is the trace in the scheduler's order; the lines of one step,
// written by goroutines running at once, by actor.
func (t *trace) String() string { return named(t.raw(), map[string]string{}) }

// raw is String before the tokens are named.
func (t *trace) raw() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := slices.Clone(t.lines)
	slices.SortStableFunc(lines, func(a, b traceLine) int {
		return cmp.Or(cmp.Compare(a.step, b.step), cmp.Compare(a.actor, b.actor), cmp.Compare(a.seq, b.seq))
	})
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "%10s  %-12s %s\n", l.at.Round(time.Millisecond), l.actor, fmt.Sprintf(l.format, l.args...))
	}
	return b.String()
}

// tokenMark surrounds a lease token in what the oracle writes, for named.
const tokenMark = "\x00"

// named replaces each marked token of s by its name, L1, L2, … in the
// order they appear (names keeps them, to name the violations alike).
func named(s string, names map[string]string) string {
	parts := strings.Split(s, tokenMark)
	for i := 1; i < len(parts); i += 2 {
		n, ok := names[parts[i]]
		if !ok {
			n = fmt.Sprintf("L%d", len(names)+1)
			names[parts[i]] = n
		}
		parts[i] = n
	}
	return strings.Join(parts, "")
}
