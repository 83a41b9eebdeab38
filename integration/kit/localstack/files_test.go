package localstack

import (
	"os"
	"path/filepath"
	"testing"
)

// What localstack.sh reads beside itself must be in the embedded set:
// a file added to hostexec and not to the go:embed line would be missing
// from every team's copy.
func TestWriteToHasEveryFileTheScriptNeeds(t *testing.T) {
	dir := t.TempDir()
	if err := WriteTo(dir); err != nil {
		t.Fatal(err)
	}
	want, err := filepath.Glob("hostexec/hostexec/*.py")
	if err != nil || len(want) == 0 {
		t.Fatalf("no hostexec sources here: %v", err)
	}
	want = append(want, Script, "docker-compose.yml", "LoopbackDynamoDB.java", "hostexec/pyproject.toml")
	reqs, _ := filepath.Glob("requirements-runtime-*.txt")
	want = append(want, reqs...)
	for _, f := range want {
		got, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Errorf("%s not written: %v", f, err)
			continue
		}
		orig, _ := os.ReadFile(f)
		if string(got) != string(orig) {
			t.Errorf("%s differs from the source", f)
		}
	}
	// The same directory again: replaced, not refused.
	if err := WriteTo(dir); err != nil {
		t.Fatalf("second WriteTo: %v", err)
	}
}
