package main

import (
	"bufio"
	"context"
	"fmt"
	"strings"
)

// confirm asks question on stderr and waits for "y" or "yes" on stdin.
// Only a person at a terminal is asked: a script must say --yes, so that
// a pipe or a file on stdin never answers for anyone.
func (a *app) confirm(ctx context.Context, question string) error {
	if !a.inTTY {
		return usagef("stdin is not a terminal, so nobody can confirm: pass --yes to write without asking")
	}
	fmt.Fprintf(a.errOut, "%s [y/N] ", question)
	answer := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(a.in).ReadString('\n')
		answer <- line
	}()
	select {
	case <-ctx.Done():
		fmt.Fprintln(a.errOut)
		return fmt.Errorf("%w: %w: nothing written", errAborted, ctx.Err())
	case line := <-answer:
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return nil
		}
		return fmt.Errorf("%w: nothing written", errAborted)
	}
}
