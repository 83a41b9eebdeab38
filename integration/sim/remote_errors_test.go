package sim

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// TestRemoteErrors: the errors the remote model makes are what the oracle
// takes them for, in every shape it makes them — a failure after the
// connection was made is never NotSent, and marked Definite is not
// definite; a request that never left is NotSent, and marked Definite is
// definite; an error after the context ended is never NotSent (its cause
// behind a message may read as definite: only the Guard's look at the
// context, after the effect, sees through that one). The oracle judges the Guard on these; a model whose errors said
// otherwise would blame the Guard for the model's own mistake.
func TestRemoteErrors(t *testing.T) {
	type kase struct {
		name    string
		err     error
		notSent bool
		late    bool // returned once the context had ended
	}
	var cases []kase
	for v := range 64 {
		for b := range nBroken {
			cases = append(cases, kase{fmt.Sprintf("%s/%d", brokenNames[b], v), brokenError(b, v), false, false})
		}
		cases = append(cases, kase{fmt.Sprintf("never sent/%d", v), notSentError(v), true, false})
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errShutdown)
	for v := range 3 {
		cases = append(cases, kase{fmt.Sprintf("after a shutdown/%d", v), endedError(ctx, v), false, true})
	}
	dl, stop := context.WithTimeout(context.Background(), -time.Second)
	defer stop()
	for v := range 3 {
		cases = append(cases, kase{fmt.Sprintf("after the deadline/%d", v), endedError(dl, v), false, true})
	}
	cases = append(cases, kase{"own deadline", ownDeadline(context.Background(), time.Nanosecond), false, false})
	for _, c := range cases {
		for v := range 2 {
			marked := mark(c.err, v)
			if got := idem.NotSent(c.err); got != c.notSent {
				t.Errorf("%s: NotSent(%v) = %v, want %v", c.name, c.err, got, c.notSent)
			}
			if got := idem.IsDefinite(marked); !c.late && got != c.notSent {
				t.Errorf("%s: IsDefinite(marked %v) = %v, want %v", c.name, marked, got, c.notSent)
			}
			if !errors.Is(marked, c.err) {
				t.Errorf("%s: the mark hides the error", c.name)
			}
		}
	}
}
