package kit

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// The fault scenarios: valid messages (App.Message) that ask the runtime
// for a fault with the attribute consumer.FaultAttribute, which a consumer
// built with the tag sqsidem_faults and deployed with
// consumer.EnvFaultFromMessage=true honours (faults.go: otherwise they are
// skipped).
//
// A crash ends the whole invocation, and that makes the crash messages
// different from every other message of the run:
//
//   - every message of the crashed batch (the event source mapping batches
//     up to 10) comes back after the visibility timeout, its receive count
//     one higher, and the batch writes no EMF line;
//   - a batch-mate in its effect when the process ends is in lease mode's
//     window: the effect may have taken place without its receipt, and the
//     attempt after takes over an unknown outcome (Reconcile, else
//     retry: applied twice; hold: to the dead-letter queue). The kit would
//     have made the double itself, and charged it to duplicates or
//     senders; a dead letter would lose a counted receive, and each crash
//     costs a batch-mate one of its maxReceiveCount receives;
//   - two crash messages in one batch hide one another: the second's first
//     receive dies with the first's, so it never crashes itself (its next
//     receive is its second).
//
// So the crash messages are sent alone: once the queue has drained (the
// main phase over: every copy deleted, every dead letter moved), one at a
// time, the next only once the key before it is applied (the probe) or its
// message dead-lettered, and the queue has drained again (its message
// deleted: it cannot share the next one's batch). Sending them while the
// main phase drains would save its dead letters' redrive time, but any
// batch could then hold a main-phase message in its effect. Each crash
// costs one visibility timeout before its message is delivered again, by
// when the crashed attempt's lease (at most the function timeout, a sixth
// of the visibility timeout with the construct) has ended: Run's bound
// adds crashScenarios visibility timeouts. The poison message never
// crashes anything: it goes with the main phase.

// solo is a message sent alone, and its key.
type solo struct {
	key string
	msg labelled
}

// faulty is App.Message(key, 0) asking for fault: the attribute
// consumer.FaultAttribute, set over one the application's message may
// carry.
func (r *run) faulty(key, fault string) labelled {
	m := r.app.Message(key, 0)
	attrs := maps.Clone(m.Attributes)
	if attrs == nil {
		attrs = map[string]string{}
	}
	attrs[consumer.FaultAttribute] = fault
	m.Attributes = attrs
	return labelled{label: r.label(key, 0), msg: m}
}

// poison: a valid message asking for consumer.FaultPoison, whose effect
// fails on every receive: to the dead-letter queue, never applied.
func (r *run) poison() scenario {
	if r.faults.poison != "" {
		return scenario{name: "poison", skip: r.faults.poison}
	}
	keys := r.keys("poison", 1)
	m := r.faulty(keys[0], consumer.FaultPoison)
	r.want.deadLetter(m.label, consumer.MetricFailed)
	return scenario{name: "poison", first: []sending{{[]labelled{m}, 1, 1}},
		check:  func(ctx context.Context, t *testing.T) { r.waitDead(ctx, t, m.label) },
		judged: []keyed{{key: keys[0], in: toRefuse, labels: []string{m.label}}}}
}

// crash: a valid message asking for a crash at point
// (consumer.FaultCrashBefore, consumer.FaultCrashAfter), sent alone. After
// its redelivery the key is judged by the consumer's promise (once;
// under retry without a Reconcile twice after the effect, with a Rerun;
// under hold held, for the operator), and the function's log shows the
// crash (consumer.FaultCrashLine of its key).
func (r *run) crash(name, point string) scenario {
	if r.faults.crash != "" {
		return scenario{name: name, skip: r.faults.crash}
	}
	keys := r.keys(strings.TrimSuffix(point, "-effect"), 1)
	m := r.faulty(keys[0], point)
	r.want.uncertain(false) // the crashed receive writes no EMF line
	k := keyed{key: keys[0], in: toApply, labels: []string{m.label}}
	return scenario{name: name, alone: []solo{{key: keys[0], msg: m}},
		check: func(ctx context.Context, t *testing.T) {
			r.judgeKeys(ctx, t, name, []keyed{k})
			// Without the crash a kept promise proves nothing: a build
			// without the tag ignores the attribute (a broken one is
			// broken, crash or not).
			r.waitLogged(ctx, t, "the crash "+point+" of "+m.label, consumer.FaultCrashLine(point, keys[0]))
		}}
}

// aloneOf lists the scenarios' messages sent alone, in order.
func aloneOf(scs []scenario) []solo {
	var all []solo
	for _, sc := range scs {
		all = append(all, sc.alone...)
	}
	return all
}

// sendAlone sends each message once the queue has drained, and waits
// until its key is applied (or receipted) or it is in the dead-letter
// queue, then for the queue to drain again (see the top of this file).
func (r *run) sendAlone(ctx context.Context, t *testing.T, msgs []solo) {
	for _, m := range msgs {
		r.send(ctx, t, []labelled{m.msg}, 1, 1)
		wait(ctx, t, m.msg.label+" applied, receipted or dead-lettered", time.Second, func() (bool, string, error) {
			applied, err := r.app.Applied(ctx, r.st, []string{m.key})
			if err != nil {
				return false, "", fmt.Errorf("App.Applied: %w", err)
			}
			if applied[m.key] > 0 {
				return true, "", nil
			}
			// A receipt without the effect is a broken promise (a
			// Reconcile that said "applied" when it was not), which the
			// scenario's check names: done waiting.
			if r.rc.store != nil {
				rec, found, err := r.rc.get(ctx, m.key)
				if err != nil {
					return false, "", err
				}
				if found && rec.Status == idem.StatusCompleted {
					return true, "", nil
				}
			}
			if err := r.dlq.poll(ctx); err != nil {
				return false, "", err
			}
			return r.dlq.count(m.msg.label) > 0, "neither applied, receipted nor in the dead-letter queue", nil
		})
		r.waitSettled(ctx, t)
	}
}

// waitLogged waits until the function's log holds line, written since
// the run started: the logs trail the invocations.
func (r *run) waitLogged(ctx context.Context, t *testing.T, what, line string) {
	t.Helper()
	wait(ctx, t, what+" in /aws/lambda/"+r.st.Function, time.Second, func() (bool, string, error) {
		found, err := r.logged(ctx, line)
		return found, fmt.Sprintf("no line %s", line), err
	})
}

// logged reports whether a line of the function's log since the run
// started contains line.
func (r *run) logged(ctx context.Context, line string) (bool, error) {
	p := cloudwatchlogs.NewFilterLogEventsPaginator(r.logs, &cloudwatchlogs.FilterLogEventsInput{
		LogGroupName: aws.String("/aws/lambda/" + r.st.Function),
		StartTime:    aws.Int64(r.start.Add(-time.Second).UnixMilli()),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return false, fmt.Errorf("the consumer's logs: %w", err)
		}
		for _, e := range page.Events {
			if strings.Contains(aws.ToString(e.Message), line) {
				return true, nil
			}
		}
	}
	return false, nil
}
