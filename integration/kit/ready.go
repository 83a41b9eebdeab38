package kit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// What the kit expects of a consumer is read from the deployed function
// itself, never from the test's author: the line its runtime logs once at
// init (consumer.LogReady: mode, unknown-outcome policy, whether the
// effect reconciles, the guarantee), its environment as a cross-check.
// To have an init to read before anything is sent, Run invokes the
// function once with an empty SQS event (lambda:InvokeFunction), which a
// consumer answers with nothing to do; the line is in the function's log
// group as soon as Lambda ships it.

// ReadyTimeout bounds the wait for the init line after that invocation.
const ReadyTimeout = 2 * time.Minute

// ErrNoReadyLine: the function's log group holds no consumer.LogReady
// line. The runtime logs it since this kit's version: an older one
// cannot say what it promises.
var ErrNoReadyLine = errors.New("kit: no \"" + consumer.LogReady + "\" line in the function's log: its runtime (pkg/idem/consumer) is older than this kit's, which reads the consumer's guarantee from that line; build the consumer with the same version of pkg/idem/consumer as the kit")

// emptyEvent is an SQS event without records: an invocation that does
// nothing but init the function if no instance is warm.
const emptyEvent = `{"Records":[]}`

// readPromise invokes the function with emptyEvent and waits, at most
// ReadyTimeout, for its latest init line, which it checks against the
// function's environment env and the stack's namespace.
func readPromise(ctx context.Context, fn LambdaAPI, logs LogsAPI, function, namespace string, env map[string]string) (promise, error) {
	if lvl := strings.ToUpper(env[consumer.EnvLogLevel]); lvl == "ERROR" {
		// The runtime writes its init line whatever the level, but not the
		// re-run lines (WARN) the judge counts.
		return promise{}, fmt.Errorf("kit: %s has %s=%s, which drops the re-run lines (WARN) the kit counts: prove it at INFO or WARN", function, consumer.EnvLogLevel, lvl)
	}
	out, err := fn.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(function), Payload: []byte(emptyEvent)})
	if err != nil {
		return promise{}, fmt.Errorf("kit: invoking %s with an empty event, for its init line (lambda:InvokeFunction): %w", function, err)
	}
	if out.FunctionError != nil {
		return promise{}, fmt.Errorf("kit: %s answered an empty event with an error (%s): %.300s (its init failed? see /aws/lambda/%s)",
			function, aws.ToString(out.FunctionError), out.Payload, function)
	}
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	for {
		line, found, err := latestReady(ctx, logs, function)
		if err != nil {
			return promise{}, err
		}
		if found {
			return line.check(env, namespace)
		}
		select {
		case <-ctx.Done():
			return promise{}, fmt.Errorf("%w (waited %s in /aws/lambda/%s after an invocation)", ErrNoReadyLine, ReadyTimeout, function)
		case <-time.After(time.Second):
		}
	}
}

// readyLine is a consumer.LogReady line.
type readyLine struct {
	Msg       string `json:"msg"`
	Mode      string `json:"mode"`
	Unknown   string `json:"unknown_outcome"`
	Reconcile bool   `json:"reconcile"`
	Guarantee string `json:"guarantee"`
	Namespace string `json:"namespace"`
	Store     string `json:"store"`
}

// parseReady reads a log line: ok is false for any other line.
func parseReady(msg string) (readyLine, bool) {
	var l readyLine
	if json.Unmarshal([]byte(msg), &l) != nil || l.Msg != consumer.LogReady {
		return readyLine{}, false
	}
	return l, true
}

// latestReady is the most recent init line of the function's log group.
func latestReady(ctx context.Context, logs LogsAPI, function string) (readyLine, bool, error) {
	var latest readyLine
	var at int64 = -1
	p := cloudwatchlogs.NewFilterLogEventsPaginator(logs, &cloudwatchlogs.FilterLogEventsInput{
		LogGroupName:  aws.String("/aws/lambda/" + function),
		FilterPattern: aws.String(`"` + consumer.LogReady + `"`),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			var missing interface{ ErrorCode() string }
			if errors.As(err, &missing) && missing.ErrorCode() == "ResourceNotFoundException" {
				return readyLine{}, false, nil // no log group before the first log
			}
			return readyLine{}, false, fmt.Errorf("kit: the consumer's logs: %w", err)
		}
		for _, e := range page.Events {
			if l, ok := parseReady(aws.ToString(e.Message)); ok && aws.ToInt64(e.Timestamp) >= at {
				latest, at = l, aws.ToInt64(e.Timestamp)
			}
		}
	}
	return latest, at >= 0, nil
}

// check is the line's promise, once its configuration agrees with the
// function's environment (the runtime's defaults for a variable unset)
// and the stack's namespace: a line that does not is another
// configuration's (or a runtime that misreports), and the kit would check
// the wrong guarantee.
func (l readyLine) check(env map[string]string, namespace string) (promise, error) {
	var errs []error
	for _, c := range []struct{ attr, got, name, def string }{
		{consumer.ReadyMode, l.Mode, consumer.EnvMode, consumer.DefaultMode},
		{consumer.ReadyUnknownOutcome, l.Unknown, consumer.EnvUnknownOutcome, consumer.DefaultUnknownOutcome},
		{consumer.ReadyStore, l.Store, consumer.EnvStore, consumer.DefaultStore},
	} {
		want := env[c.name]
		if want == "" {
			want = c.def
		}
		if c.got != want {
			errs = append(errs, fmt.Errorf("%s=%q, but the function's environment has %s=%q", c.attr, c.got, c.name, want))
		}
	}
	if l.Namespace != namespace {
		errs = append(errs, fmt.Errorf("%s=%q, but the stack outputs the namespace %q", consumer.ReadyNamespace, l.Namespace, namespace))
	}
	p := newPromise(l.Mode, l.Unknown, l.Reconcile)
	p.store = l.Store
	if l.Guarantee != p.guarantee {
		errs = append(errs, fmt.Errorf("%s=%q, but mode %s, %s and reconcile %t make %q", consumer.ReadyGuarantee, l.Guarantee, l.Mode, l.Unknown, l.Reconcile, p.guarantee))
	}
	if err := errors.Join(errs...); err != nil {
		return promise{}, fmt.Errorf("kit: the function's init line (%q) does not agree with its configuration: %w", consumer.LogReady, err)
	}
	return p, nil
}
