//go:build e2e

// The reminders stack proved by sqsidem's kit (integration/kit): `go tool
// onlocalstack -stub …` (make prove) deploys it into LocalStack with the
// kit's partner stub as the SMS provider, runs TestReminders, destroys it
// and checks nothing is left.
package reminders_test

import (
	"time"

	"testing"

	"github.com/exactlyonce/sqsidem/integration/kit"

	"example.com/reminders"
)

var app = kit.App{Stack: "Reminders", Consumer: "Reminders",
	Message: func(key string, variant int) kit.Message {
		return message(key, reminders.Reminder{To: "+4915112345678", Patient: "Ada", Clinic: "Dr. Lovelace", At: time.Date(2026, 12, 24, 9+variant, 30, 0, 0, time.UTC)})
	},
	Malformed: func(key string) kit.Message { return message(key, reminders.Reminder{To: "015112345678"}) }, // no +, no time
	// The SMS the stub was asked to send per reminder: a double would show as 2.
	Applied: kit.StubApplied(),
}

// message is a reminder as the scheduler sends it: the key in the
// reminderId attribute.
func message(key string, r reminders.Reminder) kit.Message {
	m := kit.JSON(r)
	m.Attributes = map[string]string{reminders.KeyField: key}
	return m
}

func TestReminders(t *testing.T) { kit.Run(t, app) }
