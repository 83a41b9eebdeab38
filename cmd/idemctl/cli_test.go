package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestUsageErrors: a wrong command line is one line on stderr, exit 2,
// and no request at all.
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no command"},
		{[]string{"drain"}, `unknown command "drain"`},
		{[]string{"inspect", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"inspect"}, "no KEY"},
		{[]string{"inspect", "k", "--output", "yaml"}, `--output "yaml"`},
		{[]string{"inspect", "k", "--max-peek", "0"}, "--max-peek 0"},
		{[]string{"list", "extra"}, "no arguments"},
		{[]string{"list", "--status", "done"}, `--status "done"`},
		{[]string{"list", "--segments", "0"}, "--segments 0"},
		{[]string{"list", "--older-than", "-1h"}, "cannot be negative"},
		{[]string{"resolve", "k"}, "--done or --not-done"},
		{[]string{"resolve", "k", "--done", "--not-done"}, "--done or --not-done"},
		{[]string{"resolve", "a", "b", "--done"}, "one KEY, got 2"},
		{[]string{"redrive", "x"}, "no arguments"},
		{[]string{"redrive", "--hold", "1s"}, "--hold 1s"},
		{[]string{"redrive", "--max", "0"}, "--max"},
		{[]string{"stats", "x"}, "no arguments"},
		{[]string{"inspect", "k", "--consumer", "Orders"}, "--consumer picks a consumer of --stack"},
		{[]string{"inspect", "k"}, "no receipt table: pass --stack or --table"},
		{[]string{"inspect", "k", "--table", "t", "--namespace", "a#b"}, `namespace "a#b"`},
	} {
		h := newHarness(t)
		code := h.run(tc.args...)
		line := h.errOut.String()
		if code != exitUsage || strings.Count(line, "\n") != 1 || !strings.Contains(line, tc.want) {
			t.Errorf("idemctl %q: exit %d, stderr %q; want exit 2 and one line saying %q", tc.args, code, line, tc.want)
		}
		if h.ddb.count("DescribeTable")+h.ddb.count("GetItem")+h.cfn.calls > 0 {
			t.Errorf("idemctl %q made requests", tc.args)
		}
	}
}

func TestHelp(t *testing.T) {
	h := newHarness(t)
	for _, args := range [][]string{{"-h"}, {"help"}, {"help", "redrive"}, {"redrive", "--help"}} {
		if code := h.run(args...); code != exitOK || !strings.Contains(h.out.String(), "Usage: idemctl") {
			t.Errorf("idemctl %q: exit %d, %q", args, code, h.out.String())
		}
	}
	h.run("help", "redrive")
	for _, want := range []string{"--dry-run", "--max-attempts", "--retention"} {
		if !strings.Contains(h.out.String(), want) {
			t.Errorf("redrive's help does not list %s:\n%s", want, h.out.String())
		}
	}
}

// TestFlagsAnywhere: global flags before the command or after it, flags
// between arguments, and "--" for keys that begin with "-".
func TestFlagsAnywhere(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	b := fs.Bool("x", false, "")
	pos, err := parseInterleaved(fs, []string{"k1", "-x", "k2", "--", "-k3", "-x"})
	if err != nil || !*b || !slices.Equal(pos, []string{"k1", "k2", "-k3", "-x"}) {
		t.Fatalf("parseInterleaved: %q %v %v", pos, *b, err)
	}

	h := newHarness(t)
	h.put("order-1", h.completed("order-1"))
	for _, args := range [][]string{
		{"--stack", testStack, "--output", "json", "inspect", "order-1", "--no-dlq"},
		{"inspect", "--output", "json", "order-1", "--stack", testStack, "--no-dlq"},
	} {
		if code := h.run(args...); code != 0 || !strings.Contains(h.out.String(), `"state": "completed"`) {
			t.Errorf("idemctl %q: exit %d %s %s", args, code, h.out.String(), h.errOut.String())
		}
	}
}

func TestOneLine(t *testing.T) {
	err := fmt.Errorf("%w: bad", errUsage)
	if got := oneLine(err); got != "bad" {
		t.Errorf("oneLine(usage) = %q", got)
	}
	if got := oneLine(errors.Join(errors.New("a  b"), errors.New("c"))); got != "a b; c" {
		t.Errorf("oneLine(joined) = %q", got)
	}
	if exitCode(err) != exitUsage || exitCode(errNotFound) != exitRuntime || exitCode(nil) != exitOK {
		t.Error("exit codes")
	}
}

// TestExitCodes: each cause the documentation (doc.go, the usage text,
// RUNBOOK.md's "For scripts") gives an exit code for, run. 0 done; 1 an
// error at run time, or a key without a record; 2 a wrong command line.
func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		code  int
		setup func(h *harness)
		args  []string
	}{
		{"inspect", exitOK, nil, []string{"inspect", "done"}},
		{"list", exitOK, nil, []string{"list"}},
		{"stats", exitOK, nil, []string{"stats"}},
		{"redrive", exitOK, nil, []string{"redrive"}},
		{"resolve: nothing to write", exitOK, nil, []string{"resolve", "done", "--done", "--yes"}},
		{"help", exitOK, nil, []string{"help", "inspect"}},

		{"unknown stack", exitRuntime, nil, []string{"stats", "--stack", "nope"}},
		{"unknown table", exitRuntime, func(h *harness) { h.ddb.desc = nil }, []string{"inspect", "done"}},
		{"not a receipt table", exitRuntime, func(h *harness) { h.ddb = newFakeDynamo(testTable, "id") }, []string{"list"}},
		{"unknown queue", exitRuntime, nil, []string{"inspect", "done", "--dlq-url", fakeAccount + "nope"}},
		{"inspect: unknown key", exitRuntime, nil, []string{"inspect", "done", "never"}},
		{"resolve: unknown key", exitRuntime, nil, []string{"resolve", "never", "--done", "--yes"}},
		{"no credentials", exitRuntime, func(h *harness) { h.connectErr = errNoCredentials }, []string{"list"}},
		{"write refused", exitRuntime, nil, []string{"resolve", "done", "--not-done", "--yes"}},
		{"the operator says no", exitRuntime, func(h *harness) { h.inTTY, h.stdin = true, "n\n" }, []string{"resolve", "stuck", "--done"}},
		{"redrive: moves not done", exitRuntime, func(h *harness) {
			h.sqs.add(h.dlqURL, body("new", 0), h.now, nil)
			h.sqs.fail["SendMessage"] = errFake
		}, []string{"redrive"}},

		{"unknown command", exitUsage, nil, []string{"drain"}},
		{"help for an unknown command", exitUsage, nil, []string{"help", "drain"}},
		{"no KEY", exitUsage, nil, []string{"inspect"}},
		{"no terminal to confirm on", exitUsage, nil, []string{"resolve", "stuck", "--done"}},
	} {
		h := newHarness(t)
		h.put("done", h.completed("done"))
		h.put("stuck", h.inProgress("stuck", -time.Minute))
		if tc.setup != nil {
			tc.setup(h)
		}
		args := append([]string{"--stack", testStack}, tc.args...)
		if code := h.run(args...); code != tc.code {
			t.Errorf("%s: idemctl %q exits %d, want %d: %s", tc.name, tc.args, code, tc.code, h.errOut.String())
		}
	}
}
