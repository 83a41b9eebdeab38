package redisstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/redisstore"
)

// TestPersistenceAcrossCrash: a single node killed with SIGKILL after a
// receipt and started again. With AOF the receipt is there and a copy is a
// Duplicate; without persistence it is gone and the copy runs the effect
// again. (appendfsync everysec survives a crash of the process, whose
// writes the kernel already has; what it can lose, the last second before
// a crash of the machine, cannot be played here.)
func TestPersistenceAcrossCrash(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		runs    int  // of the effect, first delivery and copy
		durable bool // Check finds nothing
	}{
		{"appendfsync always", []string{"--appendonly", "yes", "--appendfsync", "always"}, 1, true},
		{"appendfsync everysec", []string{"--appendonly", "yes", "--appendfsync", "everysec"}, 1, true},
		{"no persistence", nil, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, tc.args...)
			var e effects
			first, store := guardOn(t, srv.client)
			err := store.Check(within(t, 10*time.Second))
			if tc.durable && err != nil || !tc.durable && (!errors.Is(err, redisstore.ErrNotDurable) || errors.Is(err, idem.ErrInvalid)) {
				t.Fatalf("Check: %v; want durable = %v", err, tc.durable)
			}
			if res, err := first.Do(within(t, 10*time.Second), "k", nil, e.fn(nil)); res.Outcome != idem.Executed {
				t.Fatalf("first: %v, %v", res.Outcome, err)
			}
			srv.kill()
			srv.restart()
			second, _ := guardOn(t, srv.client)
			res, err := second.Do(within(t, 10*time.Second), "k", nil, e.fn(nil))
			if runs, _ := e.counts(); runs != tc.runs {
				t.Fatalf("copy after the restart: %v, %v; effect ran %d times, want %d", res.Outcome, err, runs, tc.runs)
			}
		})
	}
}
