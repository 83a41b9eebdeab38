package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// repoPath is the repository's import path: a published module's path is
// repoPath/<its directory>, its tag <its directory>/vX.Y.Z.
const repoPath = "github.com/exactlyonce/sqsidem"

// tagged is a published module: a directory with its own go.mod that a
// team gets with go get (or go install), tagged with the others at one
// version.
type tagged struct {
	dir string // slash-separated, from the repository's top
	// cmd: a command a team installs with `go install path@version`, which
	// refuses a go.mod with replace lines.
	cmd bool
}

func (m tagged) path() string { return repoPath + "/" + m.dir }

// published are the modules a release tags (docs/releasing.md). A go.mod
// under publishedUnder that is not here fails TestPublishedIsComplete.
var published = []tagged{
	{dir: "pkg/idem"},
	{dir: "pkg/idem/dynamostore"},
	{dir: "pkg/idem/sqsbatch"},
	{dir: "pkg/idem/redisstore"},
	{dir: "pkg/idem/consumer"},
	{dir: "pkg/idem/otelidem"},
	{dir: "infra/exactlyonce"},
	{dir: "integration/kit"},
	{dir: "cmd/idemctl", cmd: true},
}

// publishedUnder are the directories whose every go.mod is a published
// module. Of integration/, only the kit is: the rest is the template's
// suite, in the top-level module.
var publishedUnder = []string{"pkg", "infra", "cmd", "integration/kit"}

// releaseVersion is the version of CHANGELOG.md's first `## ` heading
// ("## v0.3.0 (unreleased)"): the version the release tags.
func releaseVersion(changelog []byte) (string, error) {
	sc := bufio.NewScanner(bytes.NewReader(changelog))
	for sc.Scan() {
		heading, ok := strings.CutPrefix(sc.Text(), "## ")
		if !ok {
			continue
		}
		v, _, _ := strings.Cut(strings.TrimSpace(heading), " ")
		if !semver.IsValid(v) || semver.Canonical(v) != v {
			return "", fmt.Errorf("CHANGELOG.md's first heading %q does not start with a version vX.Y.Z", sc.Text())
		}
		return v, nil
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", errors.New("CHANGELOG.md has no `## vX.Y.Z` heading")
}

// goModsUnder returns the directories under root/dirs (slash-separated,
// from root, sorted) that hold a go.mod; testdata, node_modules, cdk.out and
// hidden directories are not searched.
func goModsUnder(root string, dirs ...string) ([]string, error) {
	var found []string
	for _, d := range dirs {
		err := filepath.WalkDir(filepath.Join(root, d), func(p string, e os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() && p != filepath.Join(root, d) {
				switch name := e.Name(); {
				case name == "testdata", name == "node_modules", name == "cdk.out", strings.HasPrefix(name, "."):
					return filepath.SkipDir
				}
			}
			if !e.IsDir() && e.Name() == "go.mod" {
				rel, err := filepath.Rel(root, filepath.Dir(p))
				if err != nil {
					return err
				}
				found = append(found, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.Sort(found)
	return found, nil
}

// lockstep checks the go.mod files of the published modules and of the
// given other directories (the examples): each names its module's path,
// requires every published module it requires at version, and a command's
// has no replace lines. It reports every mismatch at once.
func lockstep(root, version string, mods []tagged, others []string) error {
	ours := make(map[string]bool, len(mods))
	for _, m := range mods {
		ours[m.path()] = true
	}
	var errs []error
	check := func(dir, wantPath string, cmd bool) {
		gomod := path.Join(dir, "go.mod")
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(gomod)))
		if err != nil {
			errs = append(errs, err)
			return
		}
		f, err := modfile.Parse(gomod, data, nil)
		if err != nil {
			errs = append(errs, err)
			return
		}
		if wantPath != "" && (f.Module == nil || f.Module.Mod.Path != wantPath) {
			errs = append(errs, fmt.Errorf("%s: module path is not %s", gomod, wantPath))
		}
		for _, r := range f.Require {
			if r.Mod.Path == repoPath {
				errs = append(errs, fmt.Errorf("%s requires %s, the template (not published): require the modules it uses (e.g. %s/infra/exactlyonce)", gomod, repoPath, repoPath))
			}
			if ours[r.Mod.Path] && r.Mod.Version != version {
				errs = append(errs, fmt.Errorf("%s requires %s %s, not %s (CHANGELOG.md)", gomod, r.Mod.Path, r.Mod.Version, version))
			}
		}
		if cmd && len(f.Replace) > 0 {
			errs = append(errs, fmt.Errorf("%s has replace lines: `go install %s@%s` refuses them (go.work builds it in the repository)", gomod, wantPath, version))
		}
	}
	for _, m := range mods {
		check(m.dir, m.path(), m.cmd)
	}
	for _, dir := range others {
		check(dir, "", false)
	}
	return errors.Join(errs...)
}
