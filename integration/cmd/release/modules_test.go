package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestReleaseVersion(t *testing.T) {
	for _, tc := range []struct {
		name, changelog, want string
	}{
		{"unreleased", "# Changelog\n\nTags: ...\n\n## v0.3.0 (unreleased)\n\n### Modules\n", "v0.3.0"},
		{"released", "# Changelog\n\n## v1.2.3\n", "v1.2.3"},
		{"first heading wins", "## v0.4.0 (unreleased)\n\n## v0.3.0\n", "v0.4.0"},
		{"pre-release", "## v0.4.0-rc.1\n", "v0.4.0-rc.1"},
		{"no version", "# Changelog\n\n## Unreleased\n\n## v0.3.0\n", ""},
		{"not canonical", "## v0.3 (unreleased)\n", ""},
		{"no v", "## 0.3.0\n", ""},
		{"subheadings only", "# Changelog\n\n### v0.3.0\n", ""},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := releaseVersion([]byte(tc.changelog))
			if tc.want == "" {
				if err == nil {
					t.Fatalf("releaseVersion = %q, want an error", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("releaseVersion = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestChangelog: the repository's CHANGELOG.md names the version to tag.
func TestChangelog(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root(t), "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := releaseVersion(data); err != nil {
		t.Fatal(err)
	}
}

// TestPublishedIsComplete: every go.mod under pkg/, infra/, cmd/ and
// integration/kit/ is a published module, so a new module cannot be left
// out of a release, and every published module has its go.mod.
func TestPublishedIsComplete(t *testing.T) {
	found, err := goModsUnder(root(t), publishedUnder...)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, m := range published {
		listed = append(listed, m.dir)
	}
	slices.Sort(listed)
	if !slices.Equal(found, listed) {
		t.Errorf("go.mod files under %v: %v\npublished (modules.go): %v\nadd a new module to published and to docs/releasing.md",
			publishedUnder, found, listed)
	}
}

// TestLockstep: the repository's go.mod files require the published
// modules at CHANGELOG.md's version (what release checks first).
func TestLockstep(t *testing.T) {
	r := root(t)
	data, err := os.ReadFile(filepath.Join(r, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	version, err := releaseVersion(data)
	if err != nil {
		t.Fatal(err)
	}
	exs, err := examples(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(exs) == 0 {
		t.Fatal("no examples/*/go.mod found")
	}
	if err := lockstep(r, version, published, exs); err != nil {
		t.Error(err)
	}
}

func TestLockstepFinds(t *testing.T) {
	mods := []tagged{{dir: "pkg/a"}, {dir: "pkg/b"}, {dir: "cmd/c", cmd: true}}
	good := map[string]string{
		"pkg/a/go.mod":      "module github.com/exactlyonce/sqsidem/pkg/a\n\ngo 1.26\n",
		"pkg/b/go.mod":      "module github.com/exactlyonce/sqsidem/pkg/b\n\ngo 1.26\n\nrequire github.com/exactlyonce/sqsidem/pkg/a v0.3.0\n\nreplace github.com/exactlyonce/sqsidem/pkg/a => ../a\n",
		"cmd/c/go.mod":      "module github.com/exactlyonce/sqsidem/cmd/c\n\ngo 1.26\n\nrequire (\n\tgithub.com/exactlyonce/sqsidem/pkg/b v0.3.0\n\texample.com/other v0.2.0\n)\n",
		"examples/x/go.mod": "module example.com/x\n\ngo 1.26\n\nrequire github.com/exactlyonce/sqsidem/pkg/b v0.3.0\n\nreplace github.com/exactlyonce/sqsidem/pkg/b => ../../pkg/b\n",
	}
	for _, tc := range []struct {
		name    string
		file    string // replaces good[file]
		content string
		want    string // in the error; "" for none
	}{
		{"in lockstep", "", "", ""},
		{"old version", "pkg/b/go.mod", strings.Replace(good["pkg/b/go.mod"], "a v0.3.0", "a v0.2.0", 1), "pkg/b/go.mod requires github.com/exactlyonce/sqsidem/pkg/a v0.2.0"},
		{"example behind", "examples/x/go.mod", strings.Replace(good["examples/x/go.mod"], "v0.3.0", "v0.2.0", 1), "examples/x/go.mod requires github.com/exactlyonce/sqsidem/pkg/b v0.2.0"},
		{"the template", "examples/x/go.mod", "module example.com/x\n\ngo 1.26\n\nrequire github.com/exactlyonce/sqsidem v0.3.0\n", "requires github.com/exactlyonce/sqsidem, the template"},
		{"a command's replace", "cmd/c/go.mod", good["cmd/c/go.mod"] + "\nreplace github.com/exactlyonce/sqsidem/pkg/b => ../../pkg/b\n", "cmd/c/go.mod has replace lines"},
		{"module path", "pkg/a/go.mod", "module github.com/exactlyonce/sqsidem/pkg/z\n\ngo 1.26\n", "pkg/a/go.mod: module path is not github.com/exactlyonce/sqsidem/pkg/a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range good {
				if name == tc.file {
					content = tc.content
				}
				writeFile(t, filepath.Join(dir, name), content)
			}
			err := lockstep(dir, "v0.3.0", mods, []string{"examples/x"})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("lockstep: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("lockstep found nothing, want %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("lockstep: %v\nwant %q", err, tc.want)
			}
		})
	}
}

func TestGoModsUnder(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"pkg/a/go.mod", "pkg/a/b/go.mod", "pkg/a/testdata/m/go.mod", "pkg/a/.cache/go.mod", "infra/x/cdk.out/go.mod", "infra/x/go.mod", "cmd/c/main.go"} {
		writeFile(t, filepath.Join(dir, name), "")
	}
	got, err := goModsUnder(dir, "pkg", "infra", "cmd")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"infra/x", "pkg/a", "pkg/a/b"}; !slices.Equal(got, want) {
		t.Errorf("goModsUnder = %v, want %v", got, want)
	}
}

func root(t *testing.T) string {
	t.Helper()
	r, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
