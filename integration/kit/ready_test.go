package kit

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	cwltypes "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// readyOf is the init line a runtime in mode, with unknown and a
// Reconcile or not, logs.
func readyOf(mode, unknown string, reconcile bool, namespace string) string {
	b := `{"time":"2026-12-02T01:04:39Z","level":"INFO","msg":"consumer ready","mode":"` + mode + `","unknown_outcome":"` + unknown + `","reconcile":`
	if reconcile {
		b += "true"
	} else {
		b += "false"
	}
	return b + `,"guarantee":"` + consumer.Guarantee(mode, unknown, reconcile) + `","namespace":"` + namespace + `","store":"dynamodb"}`
}

// timedLogs answers FilterLogEvents with events at their times, on one
// page, once the function was invoked (an init's line follows its
// invocation); it records the filter patterns asked for.
type timedLogs struct {
	fn       *fakeLambda
	events   []cwltypes.FilteredLogEvent
	patterns []string
}

func (l *timedLogs) FilterLogEvents(_ context.Context, in *cloudwatchlogs.FilterLogEventsInput, _ ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.FilterLogEventsOutput, error) {
	l.patterns = append(l.patterns, aws.ToString(in.FilterPattern))
	if len(l.fn.invoked) == 0 {
		return &cloudwatchlogs.FilterLogEventsOutput{}, nil
	}
	return &cloudwatchlogs.FilterLogEventsOutput{Events: l.events}, nil
}

func event(at int64, msg string) cwltypes.FilteredLogEvent {
	return cwltypes.FilteredLogEvent{Timestamp: aws.Int64(at), Message: aws.String(msg)}
}

// TestReadPromise: the kit invokes the function with an empty event and
// reads what it promises from its latest init line, checked against its
// environment; without a line (an older runtime) it fails saying so.
func TestReadPromise(t *testing.T) {
	hold := map[string]string{consumer.EnvMode: consumer.ModeLease, consumer.EnvUnknownOutcome: consumer.UnknownHold}
	for _, tc := range []struct {
		name   string
		env    map[string]string
		events []cwltypes.FilteredLogEvent
		fnErr  string
		want   promise
		err    string
		noLine bool // the error is ErrNoReadyLine
	}{
		{name: "the defaults: lease, retry, with a Reconcile", events: []cwltypes.FilteredLogEvent{
			event(1, readyOf(consumer.ModeLease, consumer.UnknownRetry, true, "reminders"))}, want: reconciling},
		{name: "hold, no Reconcile", env: hold, events: []cwltypes.FilteredLogEvent{
			event(1, `{"msg":"record done"}`), event(2, readyOf(consumer.ModeLease, consumer.UnknownHold, false, "reminders"))}, want: holding},
		{name: "the latest line: after a redeploy", env: hold, events: []cwltypes.FilteredLogEvent{
			event(5, readyOf(consumer.ModeLease, consumer.UnknownHold, false, "reminders")),
			event(1, readyOf(consumer.ModeLease, consumer.UnknownRetry, false, "reminders"))}, want: holding},
		{name: "a line of another configuration", env: hold, events: []cwltypes.FilteredLogEvent{
			event(1, readyOf(consumer.ModeLease, consumer.UnknownRetry, false, "reminders"))},
			err: `unknown_outcome="retry", but the function's environment has IDEM_UNKNOWN_OUTCOME="hold"`},
		{name: "another namespace", events: []cwltypes.FilteredLogEvent{
			event(1, readyOf(consumer.ModeLease, consumer.UnknownRetry, true, "bookings"))},
			err: `namespace="bookings", but the stack outputs the namespace "reminders"`},
		{name: "a guarantee that does not follow", events: []cwltypes.FilteredLogEvent{
			event(1, strings.Replace(readyOf(consumer.ModeLease, consumer.UnknownRetry, false, "reminders"), "at-least-once", "exactly-once", 1))},
			err: `guarantee="exactly-once", but mode lease, retry and reconcile false make "at-least-once"`},
		{name: "an init that failed", fnErr: `{"errorMessage":"consumer configuration: IDEM_TABLE: required"}`,
			err: "answered an empty event with an error (Unhandled)"},
		{name: "an older runtime: no line", events: []cwltypes.FilteredLogEvent{event(1, `{"msg":"record done"}`)},
			err: ErrNoReadyLine.Error(), noLine: true},
		{name: "a level that drops the re-run lines", env: map[string]string{consumer.EnvLogLevel: "error"},
			err: "LOG_LEVEL=ERROR, which drops the re-run lines (WARN)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fn := &fakeLambda{name: "fn", fnErr: tc.fnErr}
			logs := &timedLogs{fn: fn, events: tc.events}
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond) // the no-line case waits for its end; the fakes ignore it
			defer cancel()
			p, err := readPromise(ctx, fn, logs, "fn", "reminders", tc.env)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one saying %q", err, tc.err)
				}
				if errors.Is(err, ErrNoReadyLine) != tc.noLine {
					t.Errorf("err %v: ErrNoReadyLine %t, want %t", err, !tc.noLine, tc.noLine)
				}
				return
			}
			if err != nil || p != tc.want {
				t.Fatalf("promise %+v, %v; want %+v", p, err, tc.want)
			}
			if len(fn.invoked) != 1 || fn.invoked[0] != emptyEvent {
				t.Errorf("invoked with %q, want one empty SQS event", fn.invoked)
			}
			if logs.patterns[0] != `"consumer ready"` {
				t.Errorf("filter pattern %q, want the line's message quoted", logs.patterns[0])
			}
		})
	}
}
