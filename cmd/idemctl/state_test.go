package main

import (
	"strings"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// TestStateOf reads records with the units of dynamostore's takeable
// condition: a lease ends at the millisecond, retention at the second.
func TestStateOf(t *testing.T) {
	now := time.Date(2026, 11, 24, 2, 0, 0, 500_000_000, time.UTC)
	rec := func(s idem.Status, leaseUntil, expiresAt time.Time) idem.Record {
		return idem.Record{Status: s, LeaseUntil: leaseUntil, ExpiresAt: expiresAt}
	}
	later := now.Add(time.Hour)
	for _, tc := range []struct {
		name  string
		rec   idem.Record
		found bool
		want  state
	}{
		{"absent", idem.Record{}, false, stateAbsent},
		{"completed", rec(idem.StatusCompleted, now.Add(-time.Hour), later), true, stateCompleted},
		{"failed", rec(idem.StatusFailed, later, later), true, stateFailed},
		{"lease live", rec(idem.StatusInProgress, now.Add(time.Millisecond), later), true, stateInProgress},
		{"lease ends this millisecond", rec(idem.StatusInProgress, now, later), true, stateInProgress},
		{"lease ended", rec(idem.StatusInProgress, now.Add(-time.Millisecond), later), true, stateUnconfirmed},
		{"no lease end", rec(idem.StatusInProgress, time.Time{}, later), true, stateInProgress},
		{"expires this second", rec(idem.StatusCompleted, now, now.Add(-400*time.Millisecond)), true, stateCompleted},
		{"expired", rec(idem.StatusCompleted, now, now.Add(-time.Second)), true, stateExpired},
		{"expired in progress", rec(idem.StatusInProgress, later, now.Add(-time.Second)), true, stateExpired},
		{"no expiry", rec(idem.StatusCompleted, now, time.Time{}), true, stateCompleted},
		{"unknown outcome", rec(idem.StatusUnknown, later, later), true, stateUnknown},
		{"held, no expiry", rec(idem.StatusHeld, now.Add(-time.Hour), time.Time{}), true, stateHeld},
		{"expired unknown outcome", rec(idem.StatusUnknown, now, now.Add(-time.Second)), true, stateExpired},
		{"unrecognized", rec("DONE", now, later), true, stateUnrecognized},
	} {
		if got := stateOf(tc.rec, tc.found, now); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestMeaning(t *testing.T) {
	now := time.Date(2026, 11, 24, 2, 0, 0, 0, time.UTC)
	for st, want := range map[state]string{
		stateAbsent:       "absent: no record",
		stateCompleted:    "completed: the effect happened; a copy is skipped",
		stateInProgress:   "in progress, lease live until 2026-11-24T02:05:00Z (5m left)",
		stateUnconfirmed:  "`idemctl resolve order-1 --done` or `--not-done`",
		stateFailed:       "failed 3 times (last: *net.OpError): the next delivery runs it again",
		stateExpired:      "expired 1h ago (a FAILED record",
		stateUnknown:      "unknown: the last attempt's effect failed without saying whether it took place (3 attempts, last: *net.OpError): the next delivery asks the partner (reconcile) or follows the consumer's policy",
		stateHeld:         "never run again until you settle it: look it up at the remote system by its key, then `idemctl resolve order-1 --done` or `--not-done`",
		stateUnrecognized: `unrecognized status "FAILED"`,
	} {
		rec := idem.Record{Status: idem.StatusFailed, Attempts: 3, LastError: "*net.OpError", LeaseUntil: now.Add(5 * time.Minute), ExpiresAt: now.Add(-time.Hour)}
		if got := meaning(rec, st, now, "order-1", dlqNews{}); !strings.Contains(got, want) {
			t.Errorf("%s: %q does not say %q", st, got, want)
		}
	}
}

func TestHuman(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 1400 * time.Millisecond: "1s", 59 * time.Second: "59s", 4*time.Minute + 10*time.Second: "4m10s",
		4 * time.Minute: "4m", 3*time.Hour + 2*time.Minute: "3h2m", 47 * time.Hour: "47h",
		7 * 24 * time.Hour: "7d", 6*24*time.Hour + 23*time.Hour + 40*time.Minute: "7d", 50 * time.Hour: "2d2h", -90 * time.Second: "-1m30s",
	} {
		if got := human(d); got != want {
			t.Errorf("human(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestShownKey(t *testing.T) {
	hashed := "orders#" + strings.Repeat("ab", 32)
	a := &app{}
	for in, want := range map[string]string{
		hashed:                               hashed,
		"orders#jane@example.com":            "orders#<plain key, 16 bytes: --show-keys>",
		"orders#" + strings.Repeat("AB", 32): "orders#<plain key, 64 bytes: --show-keys>",
	} {
		if got := a.shownKey(in); got != want {
			t.Errorf("shownKey(%q) = %q, want %q", in, got, want)
		}
	}
	a.showKeys = true
	if got := a.shownKey("orders#jane@example.com"); got != "orders#jane@example.com" {
		t.Errorf("--show-keys: %q", got)
	}
}
