package main

import (
	"bufio"
	"io"
	"regexp"
	"strings"
)

// Failure is one failed test found in a log: a go test "--- FAIL:" line
// (subtests by their full name), a package that failed with no failed test
// (a build error, a panic, a timeout), or a pytest "FAILED" line.
type Failure struct {
	// Test is the test's full name, "" for a package that failed as a whole.
	Test    string
	Package string // the go test package, "" when the log ends before its line
	// First is the first message printed under the test ("file_test.go:NN:
	// …", its first line), or for a package its first compile error or panic.
	First string
	// Last is the last message, when there are more than one; More counts
	// those after the first.
	Last string
	More int
	// LambdaLog is the Lambdas' log of an integration scenario that
	// failed, which its cleanup names ("Lambda log PATH, last lines:",
	// integration/system_test.go); that message is not counted above.
	LambdaLog string
}

// key identifies a failure across the logs of nested tiers, which repeat
// their inner tiers' output.
func (f Failure) key() string {
	if f.Test == "" {
		return "package " + f.Package
	}
	return f.Test
}

var (
	// "=== RUN   TestX/sub", "=== NAME  TestX": who prints the lines below.
	headerLine = regexp.MustCompile(`^=== (?:RUN|PAUSE|CONT|NAME)\s+(\S.*?)\s*$`)
	// "    --- FAIL: TestX/sub (1.23s)"
	resultLine = regexp.MustCompile(`^\s*--- (FAIL|PASS|SKIP): (\S.*?) \(\d+(?:\.\d+)?s\)\s*$`)
	// "    scenarios_test.go:123: message": a t.Log, t.Error or t.Fatal.
	messageLine = regexp.MustCompile(`^\s+(\S+\.go:\d+: (.*?))\s*$`)
	lambdaLog   = regexp.MustCompile(`^Lambda log (\S+?),? last lines:`)
	// "ok  \tpkg\t1.2s", "FAIL\tpkg\t1.2s", "FAIL\tpkg [build failed]".
	packageLine = regexp.MustCompile(`^(ok|FAIL)\s+(\S+)(?:\s|$)`)
	// "x.go:12:3: undefined: y" (the compiler, vet), unindented.
	compileLine = regexp.MustCompile(`^(\S+\.go:\d+:\d+: .*?)\s*$`)
	panicLine   = regexp.MustCompile(`^(?:panic|fatal error): .*`)
	// After a timeout's panic: "\trunning tests:", then "\t\tTestX (30m0s)".
	runningLine = regexp.MustCompile(`^\s+running tests:\s*$`)
	runningTest = regexp.MustCompile(`^\s+(\S+) \(\S+\)\s*$`)
	// pytest -q's short summary: "FAILED tests/test_x.py::test_y - AssertionError: …".
	pytestLine = regexp.MustCompile(`^FAILED (\S+)(?: - (.*?))?\s*$`)
)

// Parse reads go test output, with -v or without, one package after
// another or several (go test prints each package's output in one piece),
// and returns its failures in the order of their "--- FAIL:" lines. A
// parent test that failed only because a subtest did, with no message of
// its own, is left out: its subtests say what failed.
func Parse(r io.Reader) []Failure {
	var (
		out      []Failure
		pending  []int // failures of the package whose ok/FAIL line is still to come
		current  string
		messages = map[string][]string{} // per test of that package, in order
		lambda   = map[string]string{}   // per test of that package
		compile  []string
		panicked string
		running  []string // the tests a timeout's panic names
		listing  bool
	)
	// resolve gives the pending failures their package and messages.
	resolve := func(pkg string) {
		for _, i := range pending {
			f := &out[i]
			f.Package, f.LambdaLog = pkg, lambda[f.Test]
			if msgs := messages[f.Test]; len(msgs) > 0 {
				f.First = msgs[0]
				if len(msgs) > 1 {
					f.Last, f.More = msgs[len(msgs)-1], len(msgs)-1
				}
			}
		}
		pending, current, messages, lambda, compile, panicked = nil, "", map[string][]string{}, map[string]string{}, nil, ""
		running, listing = nil, false
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if m := headerLine.FindStringSubmatch(line); m != nil {
			current = m[1]
			continue
		}
		if m := resultLine.FindStringSubmatch(line); m != nil {
			// Without -v a test's messages follow its result line.
			current = m[2]
			if m[1] == "FAIL" {
				pending = append(pending, len(out))
				out = append(out, Failure{Test: m[2]})
			}
			continue
		}
		if m := messageLine.FindStringSubmatch(line); m != nil {
			switch l := lambdaLog.FindStringSubmatch(m[2]); {
			case current == "":
			case l != nil:
				lambda[current] = l[1]
			default:
				messages[current] = append(messages[current], m[1])
			}
			continue
		}
		if m := packageLine.FindStringSubmatch(line); m != nil {
			if m[1] == "FAIL" && len(pending) == 0 {
				f := Failure{Package: m[2], First: "the package failed with no failed test (see the log)"}
				switch {
				case len(compile) > 0:
					f.First = compile[0]
				case panicked != "" && len(running) > 0:
					f.First = panicked + "; running: " + strings.Join(running, ", ")
				case panicked != "":
					f.First = panicked
				}
				out = append(out, f)
			}
			resolve(m[2])
			continue
		}
		if m := compileLine.FindStringSubmatch(line); m != nil {
			compile = append(compile, m[1])
			continue
		}
		if panicked == "" && panicLine.MatchString(line) {
			panicked = line
			continue
		}
		if panicked != "" && runningLine.MatchString(line) {
			listing = true
			continue
		}
		if m := runningTest.FindStringSubmatch(line); listing && m != nil {
			running = append(running, m[1])
			continue
		}
		listing = false
		if m := pytestLine.FindStringSubmatch(line); m != nil {
			out = append(out, Failure{Test: m[1], Package: "pytest", First: m[2]})
		}
	}
	resolve("") // a log cut short (a killed tier): its package line never came
	return dropParents(out)
}

// dropParents leaves out a failed test with no message whose subtest
// failed too.
func dropParents(fs []Failure) []Failure {
	var out []Failure
	for _, f := range fs {
		parent := false
		if f.Test != "" && f.First == "" {
			for _, g := range fs {
				if strings.HasPrefix(g.Test, f.Test+"/") {
					parent = true
					break
				}
			}
		}
		if !parent {
			out = append(out, f)
		}
	}
	return out
}
