// Package seamtest checks that a function's test-only fault switches can be
// deleted the way the README tells a fork to: delete faults.go and
// faults_test.go, and the one line of main.go marked with Marker. Nothing
// else of the function may know about faults.
package seamtest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Marker starts the comment of the line in main.go that wires the fault
// switches.
const Marker = "// FAULTS:"

// Deletable checks the function in dir (a test passes ".", its package's
// directory):
//
//   - main.go has exactly one line with Marker, and no other line of it
//     mentions the fault switches;
//   - no other file but faults.go and the tests names a FAULT_ variable or
//     mentions the switches, effect.go in particular;
//   - without faults.go, faults_test.go and the marked line, the package and
//     its tests compile (go vet with an overlay; the files are not touched).
//     This part is skipped with -short.
func Deletable(t *testing.T, dir string) {
	t.Helper()
	dir, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	overlay := map[string]string{}
	for _, path := range files {
		name := filepath.Base(path)
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case name == "faults.go" || name == "faults_test.go":
			overlay[path] = "" // deleted
		case name == "main.go":
			overlay[path] = withoutMarkedLine(t, dir, string(src))
		case !strings.HasSuffix(name, "_test.go"):
			if mentionsFaults.Match(src) {
				t.Errorf("%s mentions %q: the fault switches belong in faults.go only", name, mentionsFaults.Find(src))
			}
		}
	}
	if _, ok := overlay[filepath.Join(dir, "faults.go")]; !ok {
		t.Fatalf("no faults.go in %s", dir)
	}
	if t.Failed() || testing.Short() {
		return
	}

	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to compile the function without its faults:", err)
	}
	tmp := t.TempDir()
	replace := map[string]string{}
	for path, src := range overlay {
		if src == "" {
			replace[path] = ""
			continue
		}
		copyPath := filepath.Join(tmp, filepath.Base(path))
		if err := os.WriteFile(copyPath, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		replace[path] = copyPath
	}
	raw, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		t.Fatal(err)
	}
	overlayFile := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(overlayFile, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goBin, "vet", "-overlay="+overlayFile, ".")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("without faults.go, faults_test.go and the %s line of main.go, the function does not compile: %v\n%s", Marker, err, out)
	}
}

// mentionsFaults matches a FAULT_ variable (which a file could read without
// a compile-time reference to faults.go) or talk of the switches; not SQS's
// "sender fault". References to faults.go's names are found by compiling.
var mentionsFaults = regexp.MustCompile(`(?i)fault_|faults\.go|fault (injection|switch)|injected fault`)

// withoutMarkedLine is main.go without its one marked line.
func withoutMarkedLine(t *testing.T, dir, src string) string {
	t.Helper()
	var kept []string
	marked := 0
	for line := range strings.Lines(src) {
		switch {
		case strings.Contains(line, Marker):
			marked++
			continue
		case mentionsFaults.MatchString(line):
			t.Errorf("%s/main.go: an unmarked line mentions the fault switches: %s", dir, strings.TrimSpace(line))
		}
		kept = append(kept, line)
	}
	if marked != 1 {
		t.Errorf("%s/main.go has %d lines marked %q, want exactly 1", dir, marked, Marker)
	}
	return strings.Join(kept, "")
}
