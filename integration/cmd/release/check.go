package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/mod/modfile"
)

// goCmd runs the go command as a team outside the repository would: no
// go.work, the release's proxy first, no checksum database for the
// release's modules (the proxy's zips are not in it yet), and go.mod and
// go.sum completed as needed (a copy's go.sum has no hashes of them). And
// without the module index: the go command indexes a module of its cache
// by its directory alone, so it would read an earlier run's files for
// this run's modules (and leave this run's for the real release).
type goCmd struct {
	env  []string // os.Environ() and team
	team []string // what it sets
}

func newGoCmd(proxyDir, upstream string) goCmd {
	proxy := "file://" + filepath.ToSlash(proxyDir)
	if upstream != "" && upstream != "off" {
		proxy += "," + upstream
	}
	team := []string{
		"GOWORK=off",
		"GOFLAGS=-mod=mod",
		"GOPROXY=" + proxy,
		// Not GOPRIVATE: it would also set GONOPROXY and skip the proxy.
		"GONOSUMDB=" + repoPath,
		"GODEBUG=" + strings.TrimPrefix(os.Getenv("GODEBUG")+",goindex=0", ","),
	}
	return goCmd{env: append(os.Environ(), team...), team: team}
}

// run runs go args in dir with extra environment; on failure the error
// carries the command's output.
func (g goCmd) run(ctx context.Context, dir string, extra []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(append([]string(nil), g.env...), extra...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = ctx.Err() // killed: say why
	}
	if err != nil {
		return out, fmt.Errorf("go %s (in %s): %w\n%s", strings.Join(args, " "), dir, err, tail(out, 40))
	}
	return out, nil
}

// examples are the directories examples/*/ with a go.mod, from root.
func examples(root string) ([]string, error) {
	mods, err := filepath.Glob(filepath.Join(root, "examples", "*", "go.mod"))
	if err != nil {
		return nil, err
	}
	dirs := make([]string, len(mods))
	for i, m := range mods {
		rel, err := filepath.Rel(root, filepath.Dir(m))
		if err != nil {
			return nil, err
		}
		dirs[i] = filepath.ToSlash(rel)
	}
	return dirs, nil
}

// copyExample copies the example at src to dst, build outputs left out,
// and drops its go.mod's replace lines: the copy requires the released
// versions, as a team's module does.
func copyExample(src, dst string) error {
	err := filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case e.IsDir() && rel != "." && (e.Name() == "cdk.out" || e.Name() == "build" || e.Name() == "node_modules"):
			return filepath.SkipDir
		case e.IsDir():
			return os.MkdirAll(target, 0o755)
		case e.Type().IsRegular():
			return copyFile(p, target)
		}
		return nil // symlinks and the like: not sources
	})
	if err != nil {
		return err
	}
	gomod := filepath.Join(dst, "go.mod")
	data, err := os.ReadFile(gomod)
	if err != nil {
		return err
	}
	out, err := dropReplaces(gomod, data)
	if err != nil {
		return err
	}
	return os.WriteFile(gomod, out, 0o644)
}

// dropReplaces returns the go.mod data without its replace lines.
func dropReplaces(name string, data []byte) ([]byte, error) {
	f, err := modfile.Parse(name, data, nil)
	if err != nil {
		return nil, err
	}
	for _, r := range append([]*modfile.Replace(nil), f.Replace...) {
		if err := f.DropReplace(r.Old.Path, r.Old.Version); err != nil {
			return nil, err
		}
	}
	f.Cleanup()
	return f.Format()
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// tail returns the last n lines of out.
func tail(out []byte, n int) string {
	lines := bytes.Split(bytes.TrimRight(out, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = append([][]byte{[]byte(fmt.Sprintf("[... %d lines]", len(lines)-n))}, lines[len(lines)-n:]...)
	}
	return string(bytes.Join(lines, []byte("\n")))
}
