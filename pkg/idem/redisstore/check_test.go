package redisstore

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// An INFO reply of a safe server, which each case changes.
const safeInfo = "# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n\r\n" +
	"# Memory\r\nused_memory:1000\r\nmaxmemory_policy:noeviction\r\n\r\n" +
	"# Persistence\r\nloading:0\r\naof_enabled:1\r\n\r\n" +
	"# Replication\r\nrole:master\r\nconnected_slaves:1\r\n"

// TestCheck: Check names every unsafe setting in one error wrapping
// idem.ErrInvalid; persistence off, or replicas a failover would promote
// without WithWaitReplicas, alone is ErrNotDurable.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name       string
		info       string
		wait       int // WithWaitReplicas(wait, ...), 0 for none
		invalid    bool
		notDurable bool
		names      []string
	}{
		{"safe", safeInfo, 1, false, false, nil},
		{"valkey", strings.NewReplacer("redis_version:7.0.15", "redis_version:7.2.4\r\nvalkey_version:8.1.1", "connected_slaves:1", "connected_slaves:0").Replace(safeInfo), 0, false, false, nil},
		{"single node", strings.Replace(safeInfo, "connected_slaves:1", "connected_slaves:0", 1), 0, false, false, nil},
		{"replicas without WAIT", strings.Replace(safeInfo, "connected_slaves:1", "connected_slaves:2", 1), 0, false, true, []string{"2 replicas connected", "WithWaitReplicas"}},
		{"eviction", strings.Replace(safeInfo, "noeviction", "volatile-lru", 1), 0, true, false, []string{"maxmemory-policy volatile-lru"}},
		{"old server", strings.Replace(safeInfo, "7.0.15", "6.2.14", 1), 0, true, false, []string{`"6.2.14"`}},
		{"replica", strings.Replace(safeInfo, "role:master", "role:slave", 1), 0, true, false, []string{"role slave"}},
		{"too few replicas", safeInfo, 2, true, false, []string{"1 replicas connected, WithWaitReplicas waits for 2"}},
		{"not durable", strings.Replace(safeInfo, "aof_enabled:1", "aof_enabled:0", 1), 0, false, true, []string{"appendonly no"}},
		{"everything", strings.NewReplacer("noeviction", "allkeys-lru", "aof_enabled:1", "aof_enabled:0", "role:master", "role:slave").Replace(safeInfo),
			0, true, false, []string{"allkeys-lru", "role slave", "appendonly no"}},
	} {
		f := replies(reply(tc.info))
		s := newTestStore(t, f)
		if tc.wait > 0 {
			s.wait = &waitReplicas{n: tc.wait}
		}
		err := s.Check(context.Background())
		if errors.Is(err, idem.ErrInvalid) != tc.invalid || errors.Is(err, ErrNotDurable) != tc.notDurable {
			t.Errorf("%s: %v; want ErrInvalid %v, ErrNotDurable %v", tc.name, err, tc.invalid, tc.notDurable)
			continue
		}
		for _, name := range tc.names {
			if !strings.Contains(err.Error(), name) {
				t.Errorf("%s: %v; want it to name %s", tc.name, err, name)
			}
		}
		if c := f.calls[0]; c.cmd != "EVALSHA" || c.script != infoScript.sha || len(c.keys) != 0 {
			t.Errorf("%s: request %+v, want EVALSHA of the INFO script, no key", tc.name, c)
		}
	}
}

// TestCheckErrors: a server that cannot compile the script's flags is older
// than 7.0 (ErrInvalid); a failure to reach the server is neither finding.
func TestCheckErrors(t *testing.T) {
	old := redisErr("ERR Error compiling script (new function): user_script:1: unexpected symbol near '#'")
	if err := newTestStore(t, replies(fail(redisErr("NOSCRIPT No matching script")), fail(old))).Check(context.Background()); !errors.Is(err, idem.ErrInvalid) || !strings.Contains(err.Error(), "older than Redis 7.0") {
		t.Fatalf("Check on Redis 6: %v; want ErrInvalid naming the version", err)
	}
	err := newTestStore(t, replies(fail(io.EOF))).Check(context.Background())
	if !errors.Is(err, io.EOF) || errors.Is(err, idem.ErrInvalid) || errors.Is(err, ErrNotDurable) {
		t.Fatalf("Check with the server out of reach: %v; want the network's error only", err)
	}
}
