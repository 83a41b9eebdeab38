package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/term"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The progress bar and the confirmation prompt are for people only:
	// a terminal, not merely a character device (/dev/null is one).
	a := &app{
		in: os.Stdin, out: os.Stdout, errOut: os.Stderr,
		inTTY: term.IsTerminal(int(os.Stdin.Fd())), errTTY: term.IsTerminal(int(os.Stderr.Fd())),
		now: time.Now, getenv: os.Getenv,
		connect: func(ctx context.Context, g globals) (*clients, error) {
			return connect(ctx, g, os.Stderr)
		},
	}
	code := a.run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// aws returns the run's AWS clients, connecting on first use.
func (a *app) aws(ctx context.Context) (*clients, error) {
	if a.clients == nil {
		c, err := a.connect(ctx, a.globals)
		if err != nil {
			return nil, err
		}
		a.clients = c
	}
	return a.clients, nil
}
