// Command consumer sends appointment reminders from the stack's queue, one
// SMS per reminder id (lease mode, reconciled with the provider).
package main

import (
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"

	"example.com/reminders"
)

func main() { consumer.Start(reminders.Setup) }
