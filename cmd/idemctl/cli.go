package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
	"github.com/exactlyonce/sqsidem/pkg/idem/redisstore"
)

// envRedisURL is the consumer's own variable for its Redis store, which
// --redis-url defaults to.
const envRedisURL = consumer.EnvRedisURL

// globals are the flags every command takes, before or after its name.
type globals struct {
	// AWS, as the AWS CLI names them.
	profile, region, endpointURL, output string
	debug                                bool
	// Where the consumer's resources are: a stack's outputs, or flags
	// (which win over the outputs).
	stack, consumer                    string
	table, namespace, queueURL, dlqURL string
	keyField, partitionValue           string
	// A Redis store instead of the table (IDEM_REDIS_URL by default).
	redisURL, redisPrefix string
	plainKeys             bool
	// Personal data is not printed unless asked for.
	showBodies, showKeys bool
}

const (
	outputTable = "table"
	outputJSON  = "json"
)

// register adds the global flags to fs. The current values are the
// defaults, so that flags given before the command survive registering
// them again for the command's own flag set.
func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.profile, "profile", g.profile, "use this profile of the AWS configuration")
	fs.StringVar(&g.region, "region", g.region, "AWS region")
	fs.StringVar(&g.endpointURL, "endpoint-url", g.endpointURL, "send every request to this URL (else AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_<SERVICE>)")
	fs.StringVar(&g.output, "output", g.output, "table or json")
	fs.BoolVar(&g.debug, "debug", g.debug, "log the SDK's requests and retries to stderr")
	fs.StringVar(&g.stack, "stack", g.stack, "find the resources by this CloudFormation stack's outputs")
	fs.StringVar(&g.consumer, "consumer", g.consumer, "the construct id of the consumer, when the stack has several")
	fs.StringVar(&g.table, "table", g.table, "the receipt table")
	fs.StringVar(&g.namespace, "namespace", g.namespace, "the idem namespace of the consumer's records (default \"consumer\")")
	fs.StringVar(&g.queueURL, "queue-url", g.queueURL, "the consumer's queue")
	fs.StringVar(&g.dlqURL, "dlq-url", g.dlqURL, "the consumer's dead-letter queue")
	fs.StringVar(&g.keyField, "key-field", g.keyField, "the message attribute, else the body's JSON field, holding the key")
	fs.StringVar(&g.partitionValue, "partition-value", g.partitionValue, "the fixed partition value of a table with a sort key (dynamostore.WithCompositeKey)")
	fs.StringVar(&g.redisURL, "redis-url", g.redisURL, "the receipts are in this Redis (redis:// or rediss://, as the consumer's "+envRedisURL+", the default), not a table")
	fs.StringVar(&g.redisPrefix, "redis-prefix", g.redisPrefix, "what the consumer's redisstore puts before every storage key (redisstore.WithPrefix)")
	fs.BoolVar(&g.plainKeys, "plain-keys", g.plainKeys, "the consumer stores keys unhashed (idem.WithPlainKeys)")
	fs.BoolVar(&g.showBodies, "show-bodies", g.showBodies, "print message bodies (personal data)")
	fs.BoolVar(&g.showKeys, "show-keys", g.showKeys, "print plain storage keys that hold business keys (personal data)")
}

// command is one subcommand: its own flags and what it runs.
type command struct {
	name, args, summary string
	flags               func(fs *flag.FlagSet)
	run                 func(ctx context.Context, a *app, args []string) error
}

func commands() []*command {
	return []*command{inspectCommand(), listCommand(), resolveCommand(), redriveCommand(), statsCommand()}
}

// app is one run of idemctl: its flags, its terminal, its clock and the
// AWS clients (made on first use, so that usage errors need none).
type app struct {
	globals
	in            io.Reader
	out, errOut   io.Writer
	inTTY, errTTY bool
	now           func() time.Time
	connect       func(ctx context.Context, g globals) (*clients, error)
	clients       *clients
	// getenv reads the environment (os.Getenv; nil: an empty one).
	getenv func(string) string
	// exits are run when the run ends (closing a Redis client).
	exits []func() error
}

// onExit runs fn when the run ends.
func (a *app) onExit(fn func() error) { a.exits = append(a.exits, fn) }

// run runs the command line args and returns the exit code; an error is
// one line on stderr.
func (a *app) run(ctx context.Context, args []string) int {
	err := a.dispatch(ctx, args)
	for _, exit := range a.exits {
		_ = exit()
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintln(a.errOut, "idemctl: "+oneLine(err))
	}
	return exitCode(err)
}

func (a *app) dispatch(ctx context.Context, args []string) error {
	a.output = outputTable
	a.redisPrefix = redisstore.DefaultPrefix
	if a.getenv != nil {
		a.redisURL = a.getenv(envRedisURL)
	}
	fs := a.flagSet("idemctl")
	if err := fs.Parse(args); err != nil {
		return a.flagError(err, nil)
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return usagef("no command: one of %s (idemctl -h)", strings.Join(names(), ", "))
	}
	if rest[0] == "help" {
		cmd := find(rest[1:]...)
		if cmd == nil && len(rest) > 1 {
			return usagef("unknown command %q: one of %s", rest[1], strings.Join(names(), ", "))
		}
		a.usage(a.out, cmd)
		return flag.ErrHelp
	}
	cmd := find(rest[0])
	if cmd == nil {
		return usagef("unknown command %q: one of %s", rest[0], strings.Join(names(), ", "))
	}
	cfs := a.flagSet("idemctl " + cmd.name)
	cmd.flags(cfs)
	pos, err := parseInterleaved(cfs, rest[1:])
	if err != nil {
		return a.flagError(err, cmd)
	}
	if a.output != outputTable && a.output != outputJSON {
		return usagef("--output %q: table or json", a.output)
	}
	return cmd.run(ctx, a, pos)
}

// flagSet is a flag set with the global flags, reporting errors to us
// rather than printing them.
func (a *app) flagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	a.register(fs)
	return fs
}

func (a *app) flagError(err error, cmd *command) error {
	if errors.Is(err, flag.ErrHelp) {
		a.usage(a.out, cmd)
		return err
	}
	return usagef("%v", err)
}

// parseInterleaved parses flags anywhere among the arguments, as the AWS
// CLI takes them (`inspect K1 --output json K2`); after "--" everything is
// an argument, for keys that begin with "-".
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

func find(name ...string) *command {
	if len(name) == 0 {
		return nil
	}
	i := slices.IndexFunc(commands(), func(c *command) bool { return c.name == name[0] })
	if i < 0 {
		return nil
	}
	return commands()[i]
}

func names() []string {
	var out []string
	for _, c := range commands() {
		out = append(out, c.name)
	}
	return out
}

// usage prints the help of cmd, or of idemctl when cmd is nil.
func (a *app) usage(w io.Writer, cmd *command) {
	if cmd == nil {
		fmt.Fprint(w, "idemctl: the operator's tool for exactly-once SQS consumers (github.com/exactlyonce/sqsidem)\n\nUsage: idemctl [flags] COMMAND [flags] [ARGS]\n\nCommands:\n")
		for _, c := range commands() {
			fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
		}
		fmt.Fprint(w, "\nGlobal flags:\n")
		printFlags(w, a.flagSet("idemctl"))
		fmt.Fprint(w, "\nExit codes: 0 done; 1 an error at run time or a KEY without a record, with nothing written (redrive prints what it did before); 2 a wrong command line.\n")
		return
	}
	fmt.Fprintf(w, "Usage: idemctl %s\n\n%s\n\nFlags of %s:\n", strings.TrimSpace(cmd.name+" [flags] "+cmd.args), cmd.summary, cmd.name)
	own := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	cmd.flags(own)
	printFlags(w, own)
	fmt.Fprint(w, "\nGlobal flags: idemctl -h\n")
}

func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name := "--" + f.Name
		if _, isBool := f.Value.(interface{ IsBoolFlag() bool }); !isBool {
			name += " VALUE"
		}
		fmt.Fprintf(w, "  %-26s %s\n", name, f.Usage)
	})
}
