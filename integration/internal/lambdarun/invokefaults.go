package lambdarun

import (
	"context"
	"maps"
	"time"
)

// InvokeFaults are faults for one invocation, carried by the context given
// to Invoke (WithInvokeFaults). They let a caller doom one invocation of a
// pool while the others run untouched, and know which invocation a fault
// hit.
type InvokeFaults struct {
	// Fault decides at this invocation's fault points, instead of the
	// pool's function (SetFaultFunc). With several invocations in flight
	// in one process (Function.Concurrency), a fault call is this
	// invocation's when it carries its request id
	// (consumer.FaultHookRequestID, as the consumer runtime sends it); one
	// that carries none goes to the pool's function.
	Fault func(point, key string) Action
	// KillAfter SIGKILLs the process this long after the runtime took the
	// invocation, if it is still running then: a crash at whatever line the
	// function had reached. The invocation fails with ErrCrashed, naming
	// the fault point PointKillAfter.
	KillAfter time.Duration
}

// PointKillAfter is the fault point a KillAfter kill is counted and
// reported under.
const PointKillAfter = "kill-after"

type invokeFaultsKey struct{}

// WithInvokeFaults returns a context that makes Invoke apply f to its
// invocation.
func WithInvokeFaults(ctx context.Context, f InvokeFaults) context.Context {
	return context.WithValue(ctx, invokeFaultsKey{}, f)
}

func invokeFaultsFrom(ctx context.Context) InvokeFaults {
	f, _ := ctx.Value(invokeFaultsKey{}).(InvokeFaults)
	return f
}

// killAfter arms inv's KillAfter timer on proc, the process that took it;
// the returned func disarms it.
func (in *instance) killAfter(proc *process, inv *invocation) (stop func()) {
	p, d := in.pool, inv.faults.KillAfter
	t := time.AfterFunc(d, func() {
		in.mu.Lock()
		alive := in.proc == proc && proc.active[inv.id] == inv && !isClosed(proc.exited)
		if alive {
			proc.faultPoint, proc.faultKey = PointKillAfter, d.String()
		}
		in.mu.Unlock()
		if !alive {
			return // answered (or died) before the timer fired
		}
		p.countFault(PointKillAfter, false)
		p.countFault(PointKillAfter, true)
		p.logf("%s#%d %s %s: SIGKILL pid %d", p.fn.Name, in.id, PointKillAfter, d, proc.pid)
		kill(proc)
	})
	return func() { t.Stop() }
}

// Function returns the definition the pool runs (a copy), so a caller can
// start another pool of the same function with a few settings changed.
func (p *Pool) Function() Function {
	fn := p.fn
	fn.Env = maps.Clone(p.fn.Env)
	return fn
}
