//go:build sqsidem_faults

package consumer

// The faults a message asks for itself (EnvFaultFromMessage,
// FaultAttribute): for the kit, which cannot know a team's keys when the
// consumer is deployed.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

// exit and stderr are the process's; a test replaces them (its exit must
// not return, as os.Exit does not: it panics).
var (
	exit             = os.Exit
	stderr io.Writer = os.Stderr
)

// crash ends the process at point as SIGKILL would, but for one line on
// stderr: no receipt or release is written, no deferred function runs, the
// batch writes no metrics line and returns no response, so SQS delivers
// every message of the batch again after its visibility timeout.
func crash(point, key string) {
	fmt.Fprintln(stderr, FaultCrashLine(point, key))
	exit(FaultExitCode)
}

// messageFault is the fault msg asks for: its attribute FaultAttribute
// with EnvFaultFromMessage on, "" otherwise.
func (w *faulty) messageFault(msg events.SQSMessage) string {
	if !w.fromMessage {
		return ""
	}
	if a, ok := msg.MessageAttributes[FaultAttribute]; ok && a.StringValue != nil {
		return *a.StringValue
	}
	return ""
}

// crashPoint is where this receive of msg ends the process: FaultCrashBefore
// or FaultCrashAfter on the message's first receive, "" otherwise. It is
// asked once per receive, before the effect.
func (w *faulty) crashPoint(ctx context.Context, key string, msg events.SQSMessage) string {
	switch f := w.messageFault(msg); f {
	case "", FaultPoison:
		return ""
	case FaultCrashBefore, FaultCrashAfter:
		if w.firstReceive(key, msg) {
			return f
		}
		return ""
	default:
		w.logger(ctx).WarnContext(ctx, "unknown fault attribute ignored", slog.String(FaultAttribute, f))
		return ""
	}
}

// firstReceive reports whether this is msg's first receive: SQS's
// ApproximateReceiveCount is 1, and msg is no copy the runtime sent again
// (sqsbatch.RequeuesAttribute: a copy's count starts at 1 anew). Without a
// count, the first call for key in this process; a crash ends the process,
// so that is a first on every instance: the count is what matters. Not the
// lease's Attempt, which counts the key's acquires (every copy's, and the
// one after a crash took its lease over), not this message's receives;
// transactional mode has no lease.
func (w *faulty) firstReceive(key string, msg events.SQSMessage) bool {
	if _, requeued := msg.MessageAttributes[sqsbatch.RequeuesAttribute]; requeued {
		return false
	}
	if n, err := strconv.Atoi(msg.Attributes["ApproximateReceiveCount"]); err == nil {
		return n == 1
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	first := !w.received[key]
	w.received[key] = true
	return first
}
