package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/run.golden")

// TestSummaryOfARun reads a failed run's tier logs and status files
// (testdata/run: a phase whose log repeats its inner tiers', a tier inside
// a tier, one failed without a test, one that never ended) and compares
// the summary with testdata/run.golden (go test -update rewrites it).
func TestSummaryOfARun(t *testing.T) {
	dir, err := filepath.Abs("testdata/run")
	if err != nil {
		t.Fatal(err)
	}
	roots, err := ReadTiers(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	Write(&out, roots, 2, filepath.Dir(dir), "github.com/exactlyonce/sqsidem")
	golden := filepath.Join("testdata", "run.golden")
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != string(want) {
		t.Errorf("summary:\n%s\nwant (%s):\n%s", out.String(), golden, want)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name string
		log  string
		want []Failure
	}{{
		name: "without -v: nested, messages after the result line, a parent without its own",
		log: `--- FAIL: TestOther (0.02s)
    a_test.go:20: hi
    a_test.go:20: helper fails
--- FAIL: TestScen (0.00s)
    --- FAIL: TestScen/One (0.05s)
        a_test.go:13: bad One
            second line
        a_test.go:14: fatal One
    --- FAIL: TestScen/Two (0.05s)
        --- FAIL: TestScen/Two/inner (0.00s)
            a_test.go:16: inner fail
FAIL
FAIL	example.com/m/gt	0.107s
ok  	example.com/m/other	0.1s
`,
		want: []Failure{
			{Test: "TestOther", Package: "example.com/m/gt", First: "a_test.go:20: hi", Last: "a_test.go:20: helper fails", More: 1},
			{Test: "TestScen/One", Package: "example.com/m/gt", First: "a_test.go:13: bad One", Last: "a_test.go:14: fatal One", More: 1},
			{Test: "TestScen/Two/inner", Package: "example.com/m/gt", First: "a_test.go:16: inner fail"},
		},
	}, {
		name: "-v with parallel tests: === NAME and CONT say who prints",
		log: `=== RUN   TestScen/One
=== PAUSE TestScen/One
=== RUN   TestScen/Two
=== PAUSE TestScen/Two
=== CONT  TestScen/One
    a_test.go:10: starting One
=== CONT  TestScen/Two
    a_test.go:10: starting Two
=== NAME  TestScen/One
    a_test.go:14: fatal One
--- FAIL: TestScen (0.00s)
    --- FAIL: TestScen/One (0.05s)
    --- PASS: TestScen/Two (0.05s)
FAIL
FAIL	example.com/m/gt	0.105s
`,
		want: []Failure{{Test: "TestScen/One", Package: "example.com/m/gt", First: "a_test.go:10: starting One", Last: "a_test.go:14: fatal One", More: 1}},
	}, {
		name: "an integration scenario's cleanup names its Lambdas' log",
		log: `=== NAME  TestScenarios/Zombie
    crash_test.go:203: A: outcome executed
    system_test.go:98: Lambda log /repo/.cache/logs/integration/TestScenarios_Zombie.log, last lines:
        {"msg":"record done"}
--- FAIL: TestScenarios (0.00s)
    --- FAIL: TestScenarios/Zombie (14.20s)
FAIL
FAIL	example.com/m/integration	181.3s
`,
		want: []Failure{{Test: "TestScenarios/Zombie", Package: "example.com/m/integration", First: "crash_test.go:203: A: outcome executed",
			LambdaLog: "/repo/.cache/logs/integration/TestScenarios_Zombie.log"}},
	}, {
		name: "the same test name in two packages",
		log: `--- FAIL: TestX (0.00s)
    a_test.go:1: in a
FAIL
FAIL	example.com/m/a	0.1s
--- FAIL: TestX (0.00s)
    b_test.go:2: in b
FAIL
FAIL	example.com/m/b	0.1s
`,
		want: []Failure{
			{Test: "TestX", Package: "example.com/m/a", First: "a_test.go:1: in a"},
			{Test: "TestX", Package: "example.com/m/b", First: "b_test.go:2: in b"},
		},
	}, {
		name: "a build failure and a timeout: the package fails with no failed test",
		log: `# example.com/m/broken
broken/x.go:12:3: undefined: y
FAIL	example.com/m/broken [build failed]
panic: test timed out after 30m0s
	running tests:
		TestScenarios/ZombieStopsAtItsLease (29m59s)
FAIL	example.com/m/slow	1800.1s
ok  	example.com/m/fine	0.1s
`,
		want: []Failure{
			{Package: "example.com/m/broken", First: "broken/x.go:12:3: undefined: y"},
			{Package: "example.com/m/slow", First: "panic: test timed out after 30m0s; running: TestScenarios/ZombieStopsAtItsLease"},
		},
	}, {
		name: "a log cut short: no package line",
		log: `=== RUN   TestY
    y_test.go:3: boom
--- FAIL: TestY (1.00s)
`,
		want: []Failure{{Test: "TestY", First: "y_test.go:3: boom"}},
	}, {
		name: "pytest -q",
		log: `..F.
FAILED integration/localstack/hostexec/tests/test_api.py::test_chunked - AssertionError: empty body
1 failed, 3 passed in 0.52s
`,
		want: []Failure{{Test: "integration/localstack/hostexec/tests/test_api.py::test_chunked", Package: "pytest", First: "AssertionError: empty body"}},
	}, {
		name: "a passing run",
		log: `=== RUN   TestZ
    z_test.go:1: --- FAIL: in a message is not a result
--- PASS: TestZ (0.00s)
PASS
ok  	example.com/m/z	0.1s
`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := Parse(strings.NewReader(tc.log))
			if len(got) != len(tc.want) {
				t.Fatalf("got %d failures %+v, want %d %+v", len(got), got, len(tc.want), tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("failure %d:\n got %+v\nwant %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}
