package main

import (
	"archive/zip"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBuildProxy: the GOPROXY=file:// layout, and a module's zip without
// the modules nested in its directory.
func TestBuildProxy(t *testing.T) {
	src, dir := t.TempDir(), t.TempDir()
	gomodA := "module github.com/exactlyonce/sqsidem/pkg/a\n\ngo 1.26\n"
	writeFile(t, filepath.Join(src, "pkg/a/go.mod"), gomodA)
	writeFile(t, filepath.Join(src, "pkg/a/a.go"), "package a\n")
	writeFile(t, filepath.Join(src, "pkg/a/internal/x/x.go"), "package x\n")
	writeFile(t, filepath.Join(src, "pkg/a/b/go.mod"), "module github.com/exactlyonce/sqsidem/pkg/a/b\n\ngo 1.26\n")
	writeFile(t, filepath.Join(src, "pkg/a/b/b.go"), "package b\n")
	now := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)

	sizes, err := buildProxy(src, dir, "v0.3.0", []tagged{{dir: "pkg/a"}, {dir: "pkg/a/b"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	at := filepath.Join(dir, "github.com/exactlyonce/sqsidem/pkg/a/@v")
	if got := read(t, filepath.Join(at, "list")); got != "v0.3.0\n" {
		t.Errorf("list = %q", got)
	}
	if got := read(t, filepath.Join(at, "v0.3.0.mod")); got != gomodA {
		t.Errorf("v0.3.0.mod = %q, want the go.mod", got)
	}
	var info struct {
		Version string
		Time    time.Time
	}
	if err := json.Unmarshal([]byte(read(t, filepath.Join(at, "v0.3.0.info"))), &info); err != nil || info.Version != "v0.3.0" || !info.Time.Equal(now) {
		t.Errorf("v0.3.0.info = %+v, %v", info, err)
	}
	z, err := zip.OpenReader(filepath.Join(at, "v0.3.0.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	var names []string
	for _, f := range z.File {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	prefix := "github.com/exactlyonce/sqsidem/pkg/a@v0.3.0/"
	if want := []string{prefix + "a.go", prefix + "go.mod", prefix + "internal/x/x.go"}; !slices.Equal(names, want) {
		t.Errorf("pkg/a's zip holds %v, want %v", names, want)
	}
	if sizes["github.com/exactlyonce/sqsidem/pkg/a/b"] == 0 {
		t.Errorf("sizes = %v: no zip for pkg/a/b", sizes)
	}
}

// TestEvict: the published modules at the version leave the module cache,
// other versions stay.
func TestEvict(t *testing.T) {
	cache := t.TempDir()
	extracted := filepath.Join(cache, "github.com/exactlyonce/sqsidem/pkg/a@v0.3.0")
	writeFile(t, filepath.Join(extracted, "sub/a.go"), "package a\n")
	other := filepath.Join(cache, "github.com/exactlyonce/sqsidem/pkg/a@v0.2.0/a.go")
	writeFile(t, other, "package a\n")
	at := filepath.Join(cache, "cache/download/github.com/exactlyonce/sqsidem/pkg/a/@v")
	for _, name := range []string{"v0.3.0.info", "v0.3.0.mod", "v0.3.0.zip", "v0.3.0.ziphash", "v0.3.0.lock", "v0.2.0.zip"} {
		writeFile(t, filepath.Join(at, name), "x")
	}
	writeFile(t, filepath.Join(at, "list"), "v0.2.0\nv0.3.0\n")
	// As the go command leaves them: read-only.
	for _, d := range []string{filepath.Join(extracted, "sub"), extracted} {
		if err := os.Chmod(d, 0o555); err != nil {
			t.Fatal(err)
		}
	}

	n, err := evict(cache, "v0.3.0", []tagged{{dir: "pkg/a"}, {dir: "pkg/b"}})
	if err != nil {
		t.Fatal(err)
	}
	if n != 7 { // the directory, five downloads, the list's line
		t.Errorf("evict removed %d entries, want 7", n)
	}
	if _, err := os.Stat(extracted); !os.IsNotExist(err) {
		t.Errorf("%s: %v, want it gone", extracted, err)
	}
	left, _ := filepath.Glob(filepath.Join(at, "*"))
	for i := range left {
		left[i] = filepath.Base(left[i])
	}
	if want := []string{"list", "v0.2.0.zip"}; !slices.Equal(left, want) {
		t.Errorf("left in the download cache: %v, want %v", left, want)
	}
	if got := read(t, filepath.Join(at, "list")); got != "v0.2.0\n" {
		t.Errorf("list = %q, want v0.2.0 only", got)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("v0.2.0 was removed: %v", err)
	}

	// The last version gone, so are the directories that held it.
	if _, err := evict(cache, "v0.2.0", []tagged{{dir: "pkg/a"}}); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(cache); len(left) > 0 {
		t.Errorf("left in an emptied cache: %v", left)
	}
}

func TestDropReplaces(t *testing.T) {
	gomod := `module example.com/hotel

go 1.26

require github.com/exactlyonce/sqsidem/pkg/idem v0.3.0

// The example builds against the repository it lives in.
replace (
	github.com/exactlyonce/sqsidem/pkg/idem => ../../pkg/idem
	github.com/exactlyonce/sqsidem/infra/exactlyonce => ../../infra/exactlyonce
)

replace example.com/other v1.0.0 => example.com/fork v1.0.1
`
	out, err := dropReplaces("go.mod", []byte(gomod))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "replace") || strings.Contains(string(out), "=>") {
		t.Errorf("replace lines left:\n%s", out)
	}
	if !strings.Contains(string(out), "require github.com/exactlyonce/sqsidem/pkg/idem v0.3.0") {
		t.Errorf("the require is gone:\n%s", out)
	}
}

func read(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
