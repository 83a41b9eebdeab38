package kit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	cwltypes "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

func TestPlanFaults(t *testing.T) {
	on := map[string]string{consumer.EnvFaultFromMessage: "true"}
	for _, tc := range []struct {
		name          string
		env           map[string]string
		maxReceives   int
		poison, crash string // in the skip reasons; "" runs them
	}{
		{name: "switch on", env: on, maxReceives: 3},
		{name: "no switch", env: map[string]string{consumer.EnvMode: consumer.ModeLease}, maxReceives: 3, poison: NoFaultSwitch, crash: NoFaultSwitch},
		{name: "switch off", env: map[string]string{consumer.EnvFaultFromMessage: "false"}, maxReceives: 3, poison: NoFaultSwitch, crash: NoFaultSwitch},
		{name: "no environment", maxReceives: 3, poison: NoFaultSwitch, crash: NoFaultSwitch},
		{name: "one receive", env: on, maxReceives: 1, crash: "maxReceiveCount is 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := planFaults(tc.env, tc.maxReceives)
			for _, c := range []struct{ what, got, want string }{{"poison", p.poison, tc.poison}, {"crash", p.crash, tc.crash}} {
				if (c.want == "") != (c.got == "") || !strings.Contains(c.got, c.want) {
					t.Errorf("%s skipped for %q, want %q", c.what, c.got, c.want)
				}
			}
			rd := redrive{visibility: 24 * time.Second, maxReceives: tc.maxReceives}
			want := time.Duration(0)
			if tc.crash == "" {
				// Per crash scenario, its receives until the dead-letter queue.
				want = 2 * time.Duration(tc.maxReceives) * 24 * time.Second
			}
			if got := p.crashTime(rd); got != want {
				t.Errorf("crash time %s, want %s", got, want)
			}
		})
	}
}

// fakeLambda answers GetFunctionConfiguration for one function, and
// Invoke with nothing (or fnErr, a function error).
type fakeLambda struct {
	name    string
	env     *lambdatypes.EnvironmentResponse
	fnErr   string
	invoked []string // the payloads
}

func (f *fakeLambda) Invoke(_ context.Context, in *lambda.InvokeInput, _ ...func(*lambda.Options)) (*lambda.InvokeOutput, error) {
	if aws.ToString(in.FunctionName) != f.name {
		return nil, &lambdatypes.ResourceNotFoundException{Message: aws.String("Function not found: " + aws.ToString(in.FunctionName))}
	}
	f.invoked = append(f.invoked, string(in.Payload))
	out := &lambda.InvokeOutput{StatusCode: 200, Payload: []byte(`{"batchItemFailures":[]}`)}
	if f.fnErr != "" {
		out.FunctionError, out.Payload = aws.String("Unhandled"), []byte(f.fnErr)
	}
	return out, nil
}

func (f *fakeLambda) GetFunctionConfiguration(_ context.Context, in *lambda.GetFunctionConfigurationInput, _ ...func(*lambda.Options)) (*lambda.GetFunctionConfigurationOutput, error) {
	if aws.ToString(in.FunctionName) != f.name {
		return nil, &lambdatypes.ResourceNotFoundException{Message: aws.String("Function not found: " + aws.ToString(in.FunctionName))}
	}
	return &lambda.GetFunctionConfigurationOutput{FunctionName: in.FunctionName, Environment: f.env}, nil
}

func TestFunctionEnv(t *testing.T) {
	vars := map[string]string{consumer.EnvFaultFromMessage: "true"}
	for _, tc := range []struct {
		name string
		fn   *fakeLambda
		want map[string]string
		err  string
	}{
		{name: "variables", fn: &fakeLambda{name: "fn", env: &lambdatypes.EnvironmentResponse{Variables: vars}}, want: vars},
		{name: "none", fn: &fakeLambda{name: "fn"}, want: map[string]string{}},
		{name: "another function", fn: &fakeLambda{name: "other"}, err: "kit: function fn: "},
		{name: "undecryptable", err: "its environment: KMSAccessDeniedException",
			fn: &fakeLambda{name: "fn", env: &lambdatypes.EnvironmentResponse{Error: &lambdatypes.EnvironmentError{ErrorCode: aws.String("KMSAccessDeniedException")}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, err := functionEnv(t.Context(), tc.fn, "fn")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("err %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil || fmt.Sprint(env) != fmt.Sprint(tc.want) {
				t.Errorf("env %v, %v; want %v", env, err, tc.want)
			}
		})
	}
}

// testRun is a run for building scenarios, without AWS.
func testRun(plan faultPlan) *run {
	app := App{Message: func(key string, variant int) Message {
		return Message{Body: fmt.Sprintf(`{"orderId":%q,"n":%d}`, key, variant), Attributes: map[string]string{"tenant": "t1"}}
	}}
	p := newPromise(consumer.ModeLease, consumer.UnknownRetry, true)
	return &run{app: app, st: Stack{Key: "orderId"}, id: "kit1", want: newExpected(p), faults: plan, p: p,
		partnerSkip: "no stub in this test"}
}

// TestFaultScenarios: with the switch, poison goes with the main phase and
// ends in the dead-letter queue; each crash message is sent alone, before
// then after, and counts as crashed; without it, all three are skipped and
// expect nothing.
func TestFaultScenarios(t *testing.T) {
	r := testRun(planFaults(map[string]string{consumer.EnvFaultFromMessage: "true"}, 3))
	scs := r.scenarios()
	byName := map[string]scenario{}
	for _, sc := range scs {
		byName[sc.name] = sc
	}
	poison := byName["poison"]
	if poison.skip != "" || len(poison.first) != 1 || len(poison.alone) != 0 {
		t.Fatalf("poison: %+v, want one main-phase sending", poison)
	}
	if m := poison.first[0].msgs[0]; m.label != "poison-00-v0" || m.msg.Attributes[consumer.FaultAttribute] != consumer.FaultPoison || m.msg.Attributes["tenant"] != "t1" {
		t.Errorf("poison message %+v: want the key's valid message with %s=%s", m, consumer.FaultAttribute, consumer.FaultPoison)
	}
	var alone []string
	for _, s := range aloneOf(scs) {
		alone = append(alone, fmt.Sprintf("%s %s %s", s.key, s.msg.label, s.msg.msg.Attributes[consumer.FaultAttribute]))
	}
	want := []string{
		"kit1-crash-before-00 crash-before-00-v0 " + consumer.FaultCrashBefore,
		"kit1-crash-after-00 crash-after-00-v0 " + consumer.FaultCrashAfter,
	}
	if fmt.Sprint(alone) != fmt.Sprint(want) {
		t.Errorf("sent alone %v, want %v", alone, want)
	}
	for _, name := range []string{"crash before effect", "crash after effect"} {
		if sc := byName[name]; sc.skip != "" || len(sc.first)+len(sc.then) != 0 || sc.check == nil || len(sc.alone) != 1 {
			t.Errorf("%s: %+v, want only a message sent alone, and a check", name, sc)
		}
	}
	if err := r.want.checkDead(map[string]int{"poison-00-v0": 1, "mismatch-00-v1": 1, "keyless-text": 1, "keyless-json": 1}); err != nil {
		t.Errorf("the dead-letter queue with the poison message: %v", err)
	}
	if err := r.want.checkDead(map[string]int{"poison-00-v0": 1, "mismatch-00-v1": 1, "keyless-text": 1, "keyless-json": 1, "crash-after-00-v0": 1}); err == nil {
		t.Error("a crashed message in the dead-letter queue: no error")
	}
	if r.want.unknown != 2 {
		t.Errorf("expected %d keys with an unknown outcome, want the 2 crashed", r.want.unknown)
	}

	off := testRun(planFaults(nil, 3))
	for _, sc := range off.scenarios() {
		if strings.Contains(sc.name, "crash") || sc.name == "poison" {
			if sc.skip != NoFaultSwitch || len(sc.first)+len(sc.alone) != 0 {
				t.Errorf("%s without the switch: %+v, want skipped", sc.name, sc)
			}
		}
	}
	if err := off.want.checkDead(map[string]int{"mismatch-00-v1": 1, "keyless-text": 1, "keyless-json": 1}); err != nil || off.want.unknown != 0 {
		t.Errorf("without the switch: %v, %d unknown outcomes; want the dead letters of before, nothing crashed", err, off.want.unknown)
	}
}

// fakeLogs answers FilterLogEvents with lines, one page each, from
// StartTime on.
type fakeLogs struct {
	group string
	lines []string
	start []int64 // the StartTime of each call
}

func (f *fakeLogs) FilterLogEvents(_ context.Context, in *cloudwatchlogs.FilterLogEventsInput, _ ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.FilterLogEventsOutput, error) {
	if aws.ToString(in.LogGroupName) != f.group {
		return nil, errors.New("no log group " + aws.ToString(in.LogGroupName))
	}
	f.start = append(f.start, aws.ToInt64(in.StartTime))
	page := 0
	if in.NextToken != nil {
		fmt.Sscan(*in.NextToken, &page)
	}
	out := &cloudwatchlogs.FilterLogEventsOutput{}
	if page < len(f.lines) {
		out.Events = []cwltypes.FilteredLogEvent{{Message: aws.String(f.lines[page])}}
	}
	if page+1 < len(f.lines) {
		out.NextToken = aws.String(fmt.Sprint(page + 1))
	}
	return out, nil
}

// TestLogged: the crash line is found on any page of the function's log
// since the run started.
func TestLogged(t *testing.T) {
	line := consumer.FaultCrashLine(consumer.FaultCrashAfter, "kit1-crash-after-00")
	logs := &fakeLogs{group: "/aws/lambda/fn", lines: []string{"START RequestId: 1", `{"msg":"record done"}`, line + "\n", "Runtime.ExitError"}}
	r := &run{st: Stack{Function: "fn"}, logs: logs, start: time.UnixMilli(1_700_000_000_000)}
	for _, tc := range []struct {
		line  string
		found bool
	}{
		{line, true},
		{consumer.FaultCrashLine(consumer.FaultCrashBefore, "kit1-crash-after-00"), false},
		{consumer.FaultCrashLine(consumer.FaultCrashAfter, "kit1-crash-after-0"), false},
	} {
		found, err := r.logged(t.Context(), tc.line)
		if err != nil || found != tc.found {
			t.Errorf("logged(%q) = %t, %v; want %t", tc.line, found, err, tc.found)
		}
	}
	if logs.start[0] != 1_700_000_000_000-1000 {
		t.Errorf("read from %d, want a second before the run started", logs.start[0])
	}
}
