// Command testsummary prints the end of `make test`: how long each tier
// took, and each failed test with its tier, its first message and the log
// that holds the rest, so that a failed run says what broke without
// reading its whole output. It reads what integration/scripts/tier.sh left
// in DIR (NAME.log, NAME.status per tier); EXIT is make's exit code.
//
//	go run ./integration/internal/testsummary DIR [EXIT]
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

func main() {
	if len(os.Args) < 2 || len(os.Args) > 3 {
		fmt.Fprintln(os.Stderr, "usage: testsummary DIR [EXIT]")
		os.Exit(2)
	}
	exit := -1 // unknown
	if len(os.Args) == 3 {
		n, err := strconv.Atoi(os.Args[2])
		if err != nil {
			fmt.Fprintf(os.Stderr, "testsummary: exit code %q: %v\n", os.Args[2], err)
			os.Exit(2)
		}
		exit = n
	}
	roots, err := ReadTiers(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(1)
	}
	if len(roots) == 0 {
		fmt.Printf("== make test: no tier recorded in %s (integration/scripts/tier.sh writes there) ==\n", os.Args[1])
		return
	}
	wd, _ := os.Getwd()
	Write(os.Stdout, roots, exit, wd, modulePath(wd))
}

// Write prints the tiers' times, then what failed. Paths are shown
// relative to wd, packages relative to module.
func Write(w io.Writer, roots []*Tier, exit int, wd, module string) {
	var first, last float64
	walk(roots, 0, func(t *Tier, _ int) {
		if first == 0 || t.Start < first {
			first = t.Start
		}
		last = max(last, t.End)
	})
	fmt.Fprintln(w, "== make test: the time of each tier (wall clock; an indented tier ran inside the one above it) ==")
	fmt.Fprintf(w, "  %7s %7s  %-24s %s\n", "start", "took", "tier", "result")
	walk(roots, 0, func(t *Tier, depth int) {
		took, result := "-", "did not end"
		if t.Done() {
			took, result = clock(t.End-t.Start), "ok"
			if t.RC != 0 {
				result = fmt.Sprintf("FAILED (exit %d)", t.RC)
			}
		}
		fmt.Fprintf(w, "  %7s %7s  %-24s %s\n", clock(t.Start-first), took, strings.Repeat("  ", depth)+t.Name, result)
	})
	if last > first {
		fmt.Fprintf(w, "  %7s %7s\n", "total", clock(last-first))
	}

	var failed []string
	walk(roots, 0, func(t *Tier, _ int) {
		for _, f := range t.Failures {
			failed = append(failed, describe(f, t, wd, module))
		}
		if t.Failed() && len(t.Failures) == 0 && !anyFailed(t.Children) {
			failed = append(failed, describeTier(t, wd))
		}
	})
	verdict := "passed"
	switch {
	case exit > 0:
		verdict = fmt.Sprintf("FAILED (exit %d)", exit)
	case exit < 0 && len(failed) > 0:
		verdict = "FAILED"
	}
	switch {
	case len(failed) > 0:
		fmt.Fprintf(w, "== make test: %s: %d %s ==\n", verdict, len(failed), plural(len(failed), "failure", "failures"))
		for _, f := range failed {
			fmt.Fprint(w, f)
		}
	case exit > 0:
		fmt.Fprintf(w, "== make test: %s, outside the tiers above: its output above says where ==\n", verdict)
	default:
		fmt.Fprintf(w, "== make test: %s ==\n", verdict)
	}
}

func describe(f Failure, t *Tier, wd, module string) string {
	var b strings.Builder
	name := f.Test
	if name == "" {
		name = "package " + shortPackage(f.Package, module)
	} else if f.Package != "" && f.Package != "pytest" {
		name += " (" + shortPackage(f.Package, module) + ")"
	}
	fmt.Fprintf(&b, "FAIL [%s] %s\n", t.Name, name)
	if f.First != "" {
		fmt.Fprintf(&b, "     %s\n", clip(f.First))
	}
	if f.More > 0 {
		fmt.Fprintf(&b, "     (%d more %s; the last: %s)\n", f.More, plural(f.More, "message", "messages"), clip(f.Last))
	}
	fmt.Fprintf(&b, "     log: %s\n", rel(t.Log, wd))
	if f.LambdaLog != "" {
		fmt.Fprintf(&b, "     the Lambdas' log: %s\n", rel(f.LambdaLog, wd))
	}
	return b.String()
}

func describeTier(t *Tier, wd string) string {
	var b strings.Builder
	if t.Done() {
		fmt.Fprintf(&b, "FAIL [%s] the tier (exit %d), with no failed test in its log; its last lines:\n", t.Name, t.RC)
	} else {
		fmt.Fprintf(&b, "FAIL [%s] the tier did not end; its last lines:\n", t.Name)
	}
	lines := tail(t.Log, 5)
	if len(lines) == 0 {
		lines = []string{"(none: the log is empty)"}
	}
	for _, l := range lines {
		fmt.Fprintf(&b, "     | %s\n", clip(l))
	}
	fmt.Fprintf(&b, "     log: %s\n", rel(t.Log, wd))
	return b.String()
}

func walk(ts []*Tier, depth int, fn func(*Tier, int)) {
	for _, t := range ts {
		fn(t, depth)
		walk(t.Children, depth+1, fn)
	}
}

func anyFailed(ts []*Tier) bool {
	for _, t := range ts {
		if t.Failed() || anyFailed(t.Children) {
			return true
		}
	}
	return false
}

// makeError is make's own line about a failed recipe: it says nothing the
// lines before it do not.
var makeError = regexp.MustCompile(`^make(\[\d+\])?: \*\*\* `)

// tail returns the last n non-empty lines of the file at path, leaving
// out make's error lines.
func tail(path string, n int) []string {
	f, err := os.Open(path)
	if err != nil {
		return []string{fmt.Sprintf("(no log: %v)", err)}
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		l := strings.TrimRight(sc.Text(), " \t\r")
		if l == "" || makeError.MatchString(l) {
			continue
		}
		lines = append(lines, l)
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return lines
}

// clock formats seconds as m:ss (h:mm:ss from an hour).
func clock(s float64) string {
	n := int(s + 0.5)
	if n >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", n/3600, n/60%60, n%60)
	}
	return fmt.Sprintf("%d:%02d", n/60, n%60)
}

func clip(s string) string {
	const most = 240
	if len(s) <= most {
		return s
	}
	return s[:most] + "…"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func rel(path, wd string) string {
	if r, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}

func shortPackage(pkg, module string) string {
	switch {
	case pkg == "":
		return "package unknown: the log ends before its result"
	case module != "" && pkg == module:
		return "."
	case module != "" && strings.HasPrefix(pkg, module+"/"):
		return "./" + strings.TrimPrefix(pkg, module+"/")
	}
	return pkg
}

// modulePath is the module declared by dir's go.mod, "" without one.
func modulePath(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if m, ok := strings.CutPrefix(strings.TrimSpace(l), "module "); ok {
			return strings.Trim(strings.TrimSpace(m), `"`)
		}
	}
	return ""
}
