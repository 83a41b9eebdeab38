// Command consumer is the template's SQS-triggered Lambda: the runtime
// (pkg/idem/consumer) around the business effect (package effect), which
// is all a fork replaces. OTEL_TRACES_EXPORTER=console traces it
// (functions/internal/tracing).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/exactlyonce/sqsidem/functions/consumer/effect"
	"github.com/exactlyonce/sqsidem/functions/internal/tracing"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

func main() {
	traced, err := tracing.Consumer(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	consumer.Start(effect.Setup, traced...)
}
