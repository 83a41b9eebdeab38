// Command partner serves the proof's stand-in for a remote system
// (integration/internal/partner) until interrupted: where the test and
// localstack profiles point the effect's settings (contract.SuitePartner),
// for a stack deployed with `make deploy-local` to call.
//
//	go run ./integration/cmd/partner                 # at contract.SuitePartner
//	go run ./integration/cmd/partner -addr 127.0.0.1:0 -ignore-key
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/integration/internal/partner"
)

func main() {
	addr := flag.String("addr", strings.TrimPrefix(contract.SuitePartner, "http://"), "host:port to listen on")
	ignore := flag.Bool("ignore-key", false, "apply every call, repeats included (the suite's: a double effect shows)")
	flag.Parse()
	opts := []partner.Option{partner.At(*addr)}
	if *ignore {
		opts = append(opts, partner.IgnoreKey())
	}
	p, err := partner.Start(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "partner:", err)
		os.Exit(1)
	}
	fmt.Printf("partner: listening at %s (POST /effects, GET /effects/{key}, GET /effects, GET /stats); Ctrl-C stops it\n", p.URL())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	_ = p.Close()
}
