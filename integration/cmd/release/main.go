// Command release is `make release-check`: the release's modules as a team
// gets them, before anything is tagged (docs/releasing.md).
//
// It reads the version from CHANGELOG.md's first heading, checks that every
// published module and every example requires the published modules at
// that version (and that the commands' go.mod files have no replace lines),
// then writes the published modules of the working tree at that version
// into a file-based module proxy (GOPROXY=file://DIR), as their tags would
// publish them. Against that proxy, with no go.work, it builds and vets a
// copy of each examples/*/ outside the repository with its replace lines
// dropped, and installs cmd/idemctl with `go install …@version` and runs
// it. It prints each step and its time, and stops at the first failure
// with exit code 1.
//
// The published modules at the version are removed from the module cache
// before and after: the go command takes a cached version without asking
// the proxy, so an earlier run's copy would be checked instead of this
// tree, and a copy left behind would stand in for the real release.
//
// With -then, once all that passed, it runs a shell command in the
// repository with the team's environment (the proxy, no go.work) and
// SQSIDEM_RELEASE_DIR, the scratch directory whose examples/NAME are the
// copies: make test deploys examples/hotel into LocalStack and proves it
// from its copy, as a team would from its own repository
// (integration/scripts/e2e-example.sh).
//
//	go run ./integration/cmd/release            # scratch directories removed at the end
//	go run ./integration/cmd/release -keep      # kept, and named
//	go run ./integration/cmd/release -then 'bash integration/scripts/e2e-example.sh'
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	keep := flag.Bool("keep", false, "keep the scratch directories (the proxy, the examples' copies, the installed idemctl)")
	then := flag.String("then", "", "once the check passed, run this shell command in the repository with the team's environment and SQSIDEM_RELEASE_DIR (the copies: $SQSIDEM_RELEASE_DIR/examples/NAME)")
	timeout := flag.Duration("timeout", 30*time.Minute, "give up after this long")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	start := time.Now()
	err := run(ctx, *keep, *then)
	cancel()
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "release: FAILED after %s: %v\n", since(start), err)
		os.Exit(1)
	}
	fmt.Printf("release: ok: a team gets every module and builds every example (%s)\n", since(start))
}

func run(ctx context.Context, keep bool, then string) (err error) {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	changelog, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		return err
	}
	version, err := releaseVersion(changelog)
	if err != nil {
		return err
	}
	exs, err := examples(root)
	if err != nil {
		return err
	}
	fmt.Printf("release: %s (CHANGELOG.md): %d modules, examples %s\n", version, len(published), strings.Join(exs, ", "))
	if err := lockstep(root, version, published, exs); err != nil {
		return fmt.Errorf("the go.mod files are not in lockstep at %s:\n%w", version, err)
	}
	fmt.Printf("release: every go.mod requires the published modules at %s\n", version)

	env, err := goEnv(ctx, "GOPROXY", "GOMODCACHE")
	if err != nil {
		return err
	}
	cache := env["GOMODCACHE"]
	if !filepath.IsAbs(cache) {
		return fmt.Errorf("go env GOMODCACHE is %q, not an absolute path", cache)
	}
	if err := evictStep(cache, version, "before"); err != nil {
		return err
	}
	defer func() {
		if e := evictStep(cache, version, "after"); e != nil && err == nil {
			err = e
		}
	}()

	scratch, err := os.MkdirTemp("", "sqsidem-release-")
	if err != nil {
		return err
	}
	defer func() {
		if keep {
			fmt.Printf("release: kept %s (proxy/, examples/: the copies, bin/)\n", scratch)
			return
		}
		if e := os.RemoveAll(scratch); e != nil && err == nil {
			err = e
		}
	}()

	t := time.Now()
	proxyDir := filepath.Join(scratch, "proxy")
	sizes, err := buildProxy(root, proxyDir, version, published, t)
	if err != nil {
		return fmt.Errorf("building the proxy: %w", err)
	}
	fmt.Printf("release: proxy file://%s: %d modules at %s (%s)\n", proxyDir, len(published), version, since(t))
	for _, m := range published {
		fmt.Printf("  %-54s %7.1f KiB\n", m.path(), float64(sizes[m.path()])/1024)
	}

	g := newGoCmd(proxyDir, env["GOPROXY"])
	fmt.Printf("release: as a team: %s\n", strings.Join(g.team, " "))
	for _, ex := range exs {
		dir := filepath.Join(scratch, "examples", filepath.Base(ex))
		if err := copyExample(filepath.Join(root, filepath.FromSlash(ex)), dir); err != nil {
			return fmt.Errorf("copying %s: %w", ex, err)
		}
		// tool: its tools (go tool onlocalstack) too, and their go.sum
		// lines, as a team's go get -tool wrote them; e2e: the kit test.
		for _, args := range [][]string{{"build", "./...", "tool"}, {"vet", "-tags", "e2e", "./..."}} {
			t := time.Now()
			if _, err := g.run(ctx, dir, nil, args...); err != nil {
				return fmt.Errorf("%s, copied without its replace lines: %w", ex, err)
			}
			fmt.Printf("release: %s (a copy, no replace lines): go %s ok (%s)\n", ex, strings.Join(args, " "), since(t))
		}
	}

	if err := installCommands(ctx, g, scratch, version); err != nil || then == "" {
		return err
	}
	return runThen(ctx, g, root, scratch, then)
}

// runThen runs the shell command then in root, its output passed through,
// with the team's environment and SQSIDEM_RELEASE_DIR=scratch.
func runThen(ctx context.Context, g goCmd, root, scratch, then string) error {
	t := time.Now()
	fmt.Printf("release: then, with SQSIDEM_RELEASE_DIR=%s: %s\n", scratch, then)
	cmd := exec.CommandContext(ctx, "bash", "-c", then)
	cmd.Dir = root
	cmd.Env = append(append([]string(nil), g.env...), "SQSIDEM_RELEASE_DIR="+scratch)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("then %q: %w", then, err)
	}
	fmt.Printf("release: then ok (%s)\n", since(t))
	return nil
}

// installCommands installs each published command with go install
// path@version, as its doc tells a team to, and runs its help.
func installCommands(ctx context.Context, g goCmd, scratch, version string) error {
	bin := filepath.Join(scratch, "bin")
	for _, m := range published {
		if !m.cmd {
			continue
		}
		t := time.Now()
		target := m.path() + "@" + version
		if _, err := g.run(ctx, scratch, []string{"GOBIN=" + bin}, "install", target); err != nil {
			return err
		}
		exe := filepath.Join(bin, filepath.Base(m.dir))
		fmt.Printf("release: go install %s ok (%s)\n", target, since(t))
		out, err := g.run(ctx, scratch, nil, "version", "-m", exe)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, repoPath) {
				fmt.Printf("  %s\n", strings.Join(strings.Fields(line), " "))
			}
		}
		help, err := exec.CommandContext(ctx, exe, "-h").CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s -h: %w\n%s", exe, err, tail(help, 20))
		}
		first, _, _ := strings.Cut(strings.TrimSpace(string(help)), "\n")
		fmt.Printf("release: %s -h runs: %s\n", filepath.Base(m.dir), first)
	}
	return nil
}

func evictStep(cache, version, when string) error {
	n, err := evict(cache, version, published)
	if err != nil {
		return fmt.Errorf("removing the published modules at %s from the module cache: %w", version, err)
	}
	if n > 0 {
		fmt.Printf("release: removed %d entries of the published modules at %s from %s (%s)\n", n, version, cache, when)
	}
	return nil
}

// goEnv returns the go command's values of the named variables.
func goEnv(ctx context.Context, names ...string) (map[string]string, error) {
	out, err := exec.CommandContext(ctx, "go", append([]string{"env", "-json"}, names...)...).Output()
	if err != nil {
		return nil, fmt.Errorf("go env: %w", err)
	}
	env := map[string]string{}
	if err := json.Unmarshal(out, &env); err != nil {
		return nil, fmt.Errorf("go env: %w", err)
	}
	return env, nil
}

// repoRoot is the directory above the working directory that holds go.work.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.work above the working directory: run it in the repository")
		}
		dir = parent
	}
}

func since(t time.Time) string { return time.Since(t).Round(100 * time.Millisecond).String() }
