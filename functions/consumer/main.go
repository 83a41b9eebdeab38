// Command consumer is the template's SQS-triggered Lambda: the runtime
// (pkg/idem/consumer) around the business effect (package effect), which
// is all a fork replaces.
package main

import (
	"github.com/exactlyonce/sqsidem/functions/consumer/effect"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

func main() { consumer.Start(effect.Setup) }
