package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/sqsidem/integration/sim/redismodel"
	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/redisstore"
)

// Redis replicates asynchronously: a failover to a replica loses the
// writes it had not received yet, leases and receipts among them, unless
// the Store waits for replicas (WithWaitReplicas). The model has no
// replication, so a world with replicas does not fail over; what it checks
// is that the Store's Check names a primary with replicas and no WAIT
// (idem.ErrInvalid or redisstore.ErrNotDurable, saying replica), and finds
// nothing on a safe primary without replicas.

// checkReplicas runs Check, as an operator would at start-up, against the
// world's server with n replicas connected.
func (b *redisBackend) checkReplicas(n int) {
	s, err := redisstore.New(replicatedInfo{b.srv, n})
	must(err)
	b.srv.SetAOF(true) // INFO only: so that replication is all Check may find
	err = s.Check(context.Background())
	named := (errors.Is(err, idem.ErrInvalid) || errors.Is(err, redisstore.ErrNotDurable)) && strings.Contains(strings.ToLower(err.Error()), "replica")
	switch {
	case n > 0 && !named:
		b.w.check.violation("redisstore Check on a primary with %d replicas and no WithWaitReplicas: %v; it must name the setting (a failover loses acknowledged leases and receipts)", n, errText(err))
	case n == 0 && err != nil:
		b.w.check.violation("redisstore Check on a safe primary without replicas: %v", err)
	default:
		b.w.logf("redis", "Check with %d replicas: %v", n, errText(err))
	}
}

// replicatedInfo is a client of the model whose INFO has the replication
// section a primary with n replicas reports, which the model lacks.
type replicatedInfo struct {
	srv *redismodel.Server
	n   int
}

func (c replicatedInfo) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return c.withReplication(ctx, c.srv.Eval(ctx, script, keys, args...))
}

func (c replicatedInfo) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	return c.withReplication(ctx, c.srv.EvalSha(ctx, sha, keys, args...))
}

func (c replicatedInfo) withReplication(ctx context.Context, cmd *redis.Cmd) *redis.Cmd {
	info, ok := cmd.Val().(string)
	if cmd.Err() != nil || !ok || !strings.Contains(info, "redis_version:") {
		return cmd
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\r\n# Replication\r\nrole:master\r\nconnected_slaves:%d\r\n", strings.TrimRight(info, "\r\n"), c.n)
	for i := range c.n {
		fmt.Fprintf(&b, "slave%d:ip=10.0.0.%d,port=6379,state=online,offset=0,lag=0\r\n", i, i+2)
	}
	out := redis.NewCmd(ctx)
	out.SetVal(b.String())
	return out
}
