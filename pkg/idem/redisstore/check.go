package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// ErrNotDurable is Check's finding that records can be lost in an incident:
// the server keeps them in memory only (appendonly no), so a restart loses
// every lease and receipt written since the last RDB snapshot, if any; or
// it has replicas and the Store does not wait for them (no
// WithWaitReplicas), so a failover to a replica loses what it had not
// received yet. A copy of a message then runs its effect again. It is apart
// from idem.ErrInvalid because it is a trade-off a caller may choose (a
// server whose restarts and failovers are rarer than the retention, effects
// that are idempotent downstream too; WAIT costs latency, and no new effect
// runs while too few replicas answer), where an eviction policy is a
// mistake that costs nothing to fix.
var ErrNotDurable = errors.New("redisstore: records do not survive a restart or a failover")

// infoLua reads the server's settings. A script, so that Check needs
// nothing of the client but Eval and EvalSha; INFO is allowed in scripts,
// CONFIG GET is not (so appendfsync cannot be read). no-writes lets it run
// on a server out of memory, and fail to compile on a server older than 7.0,
// which is one of the things Check finds.
const infoLua = `#!lua flags=no-writes
return redis.call('INFO', 'server', 'memory', 'persistence', 'replication')`

var infoScript = newScript(infoLua)

// Check reads the server's INFO and returns an error that names every
// setting under which the guarantee does not hold (see the package
// documentation, Deployments):
//
//   - wrapping idem.ErrInvalid: a maxmemory-policy other than noeviction
//     (records are evicted: a receipt lost runs its effect again, a lease
//     lost runs it twice at once); a server older than Redis 7.0 (the
//     scripts' flags, which keep leases from being taken out of memory);
//     a server that is not a primary (a writable replica drops its writes
//     at its next sync); with WithWaitReplicas(n), fewer than n replicas
//     connected (every acquire would fail). Persistence off is named in the
//     same error.
//   - wrapping ErrNotDurable, when these are the only findings: appendonly
//     no; replicas connected (connected_slaves above 0) and no
//     WithWaitReplicas, so that a failover loses the records a replica had
//     not received yet. A caller that accepts them tests
//     errors.Is(err, ErrNotDurable).
//
// Any other error is the server's or the network's. On a
// *redis.ClusterClient Check reads every master and names each finding's
// node. It reads only the servers the Store writes to: a replica's own
// settings apply once it is promoted, and appendfsync is not in INFO; check
// those in the servers' configuration. One round trip per server (two the
// first time, to load the script): call it at start-up, and after a
// failover.
func (s *Store) Check(ctx context.Context) error {
	var f findings
	if c, ok := s.client.(*redis.ClusterClient); ok {
		var mu sync.Mutex
		err := c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			nf, err := s.checkNode(ctx, node)
			mu.Lock()
			defer mu.Unlock()
			f.add(node.Options().Addr+": ", nf)
			return err
		})
		if err != nil {
			return fmt.Errorf("redisstore: check: %w", err)
		}
	} else {
		var err error
		if f, err = s.checkNode(ctx, s.client); err != nil {
			return fmt.Errorf("redisstore: check: %w", err)
		}
	}
	switch {
	case len(f.unsafe) > 0:
		return fmt.Errorf("%w: redisstore: the server breaks the guarantee: %s", idem.ErrInvalid, strings.Join(append(f.unsafe, f.notDurable...), "; "))
	case len(f.notDurable) > 0:
		return fmt.Errorf("%w: %s", ErrNotDurable, strings.Join(f.notDurable, "; "))
	}
	return nil
}

// findings are what Check says, by kind.
type findings struct{ unsafe, notDurable []string }

func (f *findings) add(prefix string, g findings) {
	for _, s := range g.unsafe {
		f.unsafe = append(f.unsafe, prefix+s)
	}
	for _, s := range g.notDurable {
		f.notDurable = append(f.notDurable, prefix+s)
	}
}

// checkNode reads one server's INFO through c and judges it.
func (s *Store) checkNode(ctx context.Context, c Client) (findings, error) {
	reply, err := evalOn(ctx, c, infoScript, nil)
	if err != nil && strings.Contains(err.Error(), "Error compiling script") {
		return findings{unsafe: []string{"a server older than Redis 7.0: the scripts need 7.0 or later, or Valkey"}}, nil
	}
	if err != nil {
		return findings{}, err
	}
	text, ok := reply.(string)
	if !ok {
		return findings{}, fmt.Errorf("unexpected INFO reply %T", reply)
	}
	return s.judge(parseInfo(text)), nil
}

// judge names what in info breaks the guarantee.
func (s *Store) judge(info map[string]string) findings {
	var f findings
	if v := info["redis_version"]; major(v) < 7 {
		f.unsafe = append(f.unsafe, fmt.Sprintf("redis_version %q: the scripts need Redis 7.0 or later, or Valkey", v))
	}
	if p := info["maxmemory_policy"]; p != "noeviction" {
		f.unsafe = append(f.unsafe, fmt.Sprintf("maxmemory-policy %s evicts records, receipts and live leases included: set noeviction", p))
	}
	if r := info["role"]; r != "master" {
		f.unsafe = append(f.unsafe, fmt.Sprintf("role %s: the Store must write to the primary (a writable replica drops its writes at its next sync)", r))
	}
	replicas, _ := strconv.Atoi(info["connected_slaves"])
	switch {
	case s.wait != nil && replicas < s.wait.n:
		f.unsafe = append(f.unsafe, fmt.Sprintf("%d replicas connected, WithWaitReplicas waits for %d: every acquire would fail", replicas, s.wait.n))
	case s.wait == nil && replicas > 0:
		f.notDurable = append(f.notDurable, fmt.Sprintf("%d replicas connected and no WithWaitReplicas: replication is asynchronous, so a failover "+
			"loses the leases and receipts a replica had not received yet (use WithWaitReplicas with the number of replicas)", replicas))
	}
	if info["aof_enabled"] != "1" {
		f.notDurable = append(f.notDurable, "appendonly no: a restart loses every record written since the last RDB snapshot, if any "+
			"(set appendonly yes, with appendfsync always, or everysec: a crash of the machine loses up to a second)")
	}
	return f
}

// parseInfo reads INFO's "name:value" lines; section headers and blank
// lines have no colon.
func parseInfo(text string) map[string]string {
	info := make(map[string]string)
	for line := range strings.Lines(text) {
		if name, value, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			info[name] = value
		}
	}
	return info
}

// major is the major version of a version string, 0 if there is none.
func major(version string) int {
	m, _, _ := strings.Cut(version, ".")
	n, _ := strconv.Atoi(m)
	return n
}
